"""The rules for names, IDs and times a caller gives: one place that says what a workflow name,
an execution ID, a step key or a number of seconds may be, and the ID the runtime gives an
admission whose caller chose none.

>>> check_execution_id("order-42")
'order-42'
>>> generated_execution_id("ship-order", 3)
'@ship-order-3'
>>> start_target_id("ship-order", "order-42", "ship")
'@ship-order:order-42/ship'
>>> start_target_id("ship-order", "order-42", "ship", taken=["@ship-order:order-42/ship"])
'@ship-order:order-42/ship~2'
>>> continued_run_id("counter", "counter-1", "counter-1")
'@counter:counter-1/~2'
>>> continued_run_id("counter", "counter-1", "@counter:counter-1/~2")
'@counter:counter-1/~3'
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from yieldstar_sim.core.model import InvalidIDError

if TYPE_CHECKING:
    from collections.abc import Collection

_RESERVED_PREFIX = "@"


def control_character(value: str) -> str | None:
    """The first ASCII control character (U+0000 to U+001F, or DEL) in ``value``, if any.

    The one rule for names and IDs: workflow names, execution IDs, step keys, lease owners.
    """
    found = _CONTROL_CHARACTER.search(value)  # a scan in C: every call checks several names
    return None if found is None else found.group()


_CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f]")
#: ``control_character``'s scan alone (a match or None), for a check made at every step a
#: delivery reaches, where the call around it cost as much as the scan.
control_match = _CONTROL_CHARACTER.search


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
    """The ID the runtime gives the ``seq``-th admission when the caller chose none: a trigger
    without an ID (a ``:`` or ``%`` in the workflow's name percent-encoded, so that it never
    meets a start's target ID, which has an unencoded ``:``)."""
    return f"{trigger_id_prefix(workflow_id)}{seq}"


def trigger_id_prefix(workflow_id: str) -> str:
    """What a generated trigger ID is before its number (``generated_execution_id``)."""
    return f"{_RESERVED_PREFIX}{_encoded(workflow_id, ':')}-"


def start_target_base(workflow_id: str, caller: str, step_key: str) -> str:
    """The ID of the target of start request (``caller``, ``step_key``), unless that ID is
    taken (``start_target_id``): ``@{workflow}:{caller}/{step key}``, the workflow's ``:``
    and the step key's ``/`` and ``~`` percent-encoded (and ``%`` in both), so that the first
    ``:``, the last ``/`` and a ``~`` after it read the ID back whatever the caller's ID holds.
    A function of the request alone: two starts admitted in either order get the same IDs."""
    return f"{_RESERVED_PREFIX}{_encoded(workflow_id, ':')}:{caller}/{_encoded(step_key, '/~')}"


def start_target_id(
    workflow_id: str, caller: str, step_key: str, *, taken: Collection[str] = ()
) -> str:
    """The ID a runtime gives the target of start request (``caller``, ``step_key``):
    ``start_target_base``, or, where an execution (or a pruned target's tombstone) holds that
    ID, the base with ``~{n}``, ``n`` one more than the highest such suffix held (the base
    counts as 1). ``taken`` holds every held ID (read through only when it holds the base).
    The base is held only by a target of an earlier incarnation of the caller's ID, pruned
    since: a request admits one target, and no other ID has this form. The SQL adapters
    compute the same in their start statements (the ``target_id`` fragment)."""
    return free_id(start_target_base(workflow_id, caller, step_key), taken)


def free_id(base: str, taken: Collection[str]) -> str:
    """``base``, or where ``taken`` holds it, the base with ``~{n}``, ``n`` one more than the
    highest such suffix held (the base counts as 1): what keeps a derived ID unique after the
    ID it is derived from was pruned and admitted again. The SQL adapters compute the same
    (the ``target_id`` fragment)."""
    if base not in taken:
        return base
    highest = 1
    for held in taken:
        if held.startswith(base) and (found := _SUFFIX.fullmatch(held, len(base))):
            highest = max(highest, int(found.group(1)))
    return f"{base}~{highest + 1}"


def continued_run_base(workflow_id: str, instance: str, previous: str) -> str:
    """The ID of the run after ``previous`` of workflow instance ``instance`` (the ID of its
    first run), continued as new, unless that ID is taken (``continued_run_id``):
    ``@{workflow}:{instance}/~{n}``, ``n`` the new run's number (the first run is 1). A
    function of the instance and the run alone, as a start's target is of its request: two
    instances continuing in either order get the same IDs. What follows the last ``/`` never
    names a start's target (its step key is not empty, and its ``~`` percent-encoded), and the
    ``:`` never a trigger's generated ID. The number is read back from ``previous``, the ID
    of the run that continues: ``instance`` itself, or one this function made."""
    base = f"{_RESERVED_PREFIX}{_encoded(workflow_id, ':')}:{instance}/~"
    run = 1
    if previous != instance and previous.startswith(base):
        found = _RUN.match(previous, len(base))
        run = int(found.group()) if found else 1
    return f"{base}{run + 1}"


def continued_run_id(
    workflow_id: str, instance: str, previous: str, *, taken: Collection[str] = ()
) -> str:
    """The ID a runtime gives the run after ``previous`` of workflow instance ``instance``,
    continued as new: ``continued_run_base``, or, where an execution (or a tombstone) holds
    that ID, the base with ``~{m}`` (``free_id``). The base is held only by a run of an
    earlier instance with the same ID, whose first run was pruned and its ID admitted
    again."""
    return free_id(continued_run_base(workflow_id, instance, previous), taken)


#: A suffix the SQL adapters read the same way: ``~`` and one to 18 digits.
_SUFFIX = re.compile(r"~([0-9]{1,18})")
_RUN = re.compile(r"[0-9]{1,18}")


def _encoded(text: str, special: str) -> str:
    """``text`` with ``%`` and each of ``special`` percent-encoded (``%3A`` for ``:``)."""
    for char in "%" + special:
        if char in text:
            text = text.replace(char, f"%{ord(char):02X}")
    return text


def check_time(value: float, what: str) -> float:
    """Return ``value`` as a float if it is a finite, non-negative number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number of seconds, not {value!r}")
    if value < 0:
        raise ValueError(f"{what} must not be negative, not {value!r}")
    return float(value)
