"""The rules for names, IDs and times a caller gives: one place that says what a workflow name,
an execution ID, a step key or a number of seconds may be, and the ID the runtime gives an
admission whose caller chose none.

>>> check_execution_id("order-42")
'order-42'
>>> generated_execution_id("ship-order", 3)
'@ship-order-3'
"""

from __future__ import annotations

import math
import re

from yieldstar_sim.core.model import InvalidIDError

_RESERVED_PREFIX = "@"


def control_character(value: str) -> str | None:
    """The first ASCII control character (U+0000 to U+001F, or DEL) in ``value``, if any.

    The one rule for names and IDs: workflow names, execution IDs, step keys, lease owners.
    """
    found = _CONTROL_CHARACTER.search(value)  # a scan in C: every call checks several names
    return None if found is None else found.group()


_CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f]")


def check_execution_id(execution_id: object, *, what: str = "execution ID") -> str:
    """Return ``execution_id`` if a caller may choose it, else raise ``InvalidIDError``.

    Empty IDs, IDs with ASCII control characters, and IDs starting with ``@`` (the namespace of
    runtime-generated IDs) are refused.
    """
    if not isinstance(execution_id, str):
        raise InvalidIDError(f"{what} must be a string, not {type(execution_id).__name__}")
    if not execution_id:
        raise InvalidIDError(f"{what} must not be empty")
    bad = control_character(execution_id)
    if bad is not None:
        raise InvalidIDError(
            f"{what} {execution_id!r} contains the ASCII control character {bad!r}"
        )
    if execution_id.startswith(_RESERVED_PREFIX):
        raise InvalidIDError(
            f"{what} {execution_id!r} starts with {_RESERVED_PREFIX!r}, which is reserved for "
            "IDs the runtime generates"
        )
    return execution_id


def check_name(value: object, what: str) -> str:
    """Return ``value`` if it is a non-empty string without control characters."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, not {value!r}")
    if _CONTROL_CHARACTER.search(value) is not None:  # checked at every runtime call
        raise ValueError(f"{what} {value!r} contains an ASCII control character")
    return value


def generated_execution_id(workflow_id: str, seq: int) -> str:
    """The ID the runtime gives the ``seq``-th admission when the caller chose none."""
    return f"{_RESERVED_PREFIX}{workflow_id}-{seq}"


def check_time(value: float, what: str) -> float:
    """Return ``value`` as a float if it is a finite, non-negative number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number of seconds, not {value!r}")
    if value < 0:
        raise ValueError(f"{what} must not be negative, not {value!r}")
    return float(value)
