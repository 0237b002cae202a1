"""Faults on the command line: ``run --fault KIND[:FIELD=VALUE,...]`` and
``explore --kinds KIND,...``, each checked as argparse reads it, so a typo is the subcommand's
usage error (exit 2) with the nearest name, never a run.

>>> fault("crash:op=put_step,step_key=ship").describe()
'crash before put_step of step ship'
>>> fault_kinds("crash, freeze")
('crash', 'freeze')
"""

from __future__ import annotations

import argparse

from yieldstar_sim.core.suggest import did_you_mean
from yieldstar_sim.simulation.faults import FAULT_KINDS, Fault

#: The fields a ``--fault`` may set, as ``ys.Fault`` names them, and how each is read.
FIELDS: dict[str, type] = {
    "op": str,
    "worker": str,
    "execution_id": str,
    "step_key": str,
    "occurrence": int,
    "at": int,
    "seconds": float,
}

FAULT_HELP = (
    "add a fault to the scenario's plan (repeatable): KIND, or KIND:FIELD=VALUE,... with "
    f"the fields {', '.join(FIELDS)}, e.g. crash:op=put_step,step_key=ship "
    "(`yieldstar-sim list --faults` lists the kinds and ops)"
)


def fault_kinds(text: str) -> tuple[str, ...]:
    """``--kinds``: a comma-separated list of fault kinds, each one ``explore`` knows."""
    kinds = tuple(part.strip() for part in text.split(",") if part.strip())
    if not kinds:
        raise argparse.ArgumentTypeError(f"name one or more fault kinds: {', '.join(FAULT_KINDS)}")
    for kind in kinds:
        if kind not in FAULT_KINDS:
            raise argparse.ArgumentTypeError(
                f"unknown fault kind {kind!r}{did_you_mean(kind, FAULT_KINDS)}; the kinds are "
                f"{', '.join(FAULT_KINDS)}"
            )
    return kinds


def fault(text: str) -> Fault:
    """``--fault``: a ``ys.Fault`` written as ``KIND[:FIELD=VALUE,...]``."""
    kind, _, rest = text.partition(":")
    fields: dict[str, object] = {}
    for part in filter(None, (piece.strip() for piece in rest.split(","))):
        name, equals, value = (piece.strip() for piece in part.partition("="))
        if not equals or not value:
            raise argparse.ArgumentTypeError(
                f"{part!r} in --fault {text!r}: write FIELD=VALUE, the fields being "
                f"{', '.join(FIELDS)}"
            )
        if name not in FIELDS:
            raise argparse.ArgumentTypeError(
                f"unknown fault field {name!r}{did_you_mean(name, FIELDS)} in --fault {text!r}; "
                f"the fields are {', '.join(FIELDS)}"
            )
        if name in fields:
            raise argparse.ArgumentTypeError(f"--fault {text!r} sets {name} twice")
        try:
            fields[name] = FIELDS[name](value)
        except ValueError:
            what = "a whole number" if FIELDS[name] is int else "a number"
            raise argparse.ArgumentTypeError(
                f"{name}={value!r} in --fault {text!r}: {name} is {what}"
            ) from None
    try:
        return Fault(kind.strip(), **fields)  # type: ignore[arg-type]
    except (TypeError, ValueError) as error:
        raise argparse.ArgumentTypeError(f"--fault {text!r}: {error}") from None
