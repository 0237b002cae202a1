"""'Did you mean ...?': the nearest of the names a user could have meant, for error messages.

>>> did_you_mean("durable-strat", ["durable-start", "frozen-worker"])
" (did you mean 'durable-start'?)"
>>> did_you_mean("zzz", ["durable-start"])
''
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


def nearest(word: str, options: Iterable[str]) -> str | None:
    """The option closest to ``word`` in spelling, if any is close (``difflib``'s ratio of at
    least 0.6, with ``_`` and ``-`` counted alike)."""
    by_key = {str(option).replace("_", "-"): str(option) for option in options}
    found = difflib.get_close_matches(word.replace("_", "-"), list(by_key), n=1)
    return by_key[found[0]] if found else None


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the option nearest ``word``, or ``""`` when none is
    near: to follow the name that was not found in an error message."""
    match = nearest(word, options)
    return "" if match is None else f" (did you mean {match!r}?)"


def misspelt(name: str, present: Iterable[str]) -> str | None:
    """The name of ``present`` that ``name``, absent from it, is one typing slip away from
    (``one_slip_apart``), or None. Stricter than ``nearest``: it decides that a name is a
    mistake, not which name to suggest for one already known to be.

    >>> misspelt("courier.bookd", ["card.charged", "courier.booked"])
    'courier.booked'
    >>> misspelt("courier.rebooked", ["courier.booked"]) is None  # another effect
    True
    >>> misspelt("s2", ["s1"]) is None  # a numbered series: the next one, not a slip
    True
    """
    options = sorted(set(present))
    if name in options:
        return None
    return next((option for option in options if one_slip_apart(name, option)), None)


def one_slip_apart(first: str, second: str) -> bool:
    """Whether one letter typed wrong, left out, typed twice or swapped with the next turns
    one name into the other (a Damerau-Levenshtein distance of 1), other than in their digits
    alone: ``order-41`` and ``order-42``, ``@ship-order-2`` and ``@ship-order-3`` are
    different executions of a series, not slips.

    >>> [one_slip_apart("chrage", "charge"), one_slip_apart("ordr", "order")]
    [True, True]
    >>> [one_slip_apart("order-41", "order-42"), one_slip_apart("refund", "charge")]
    [False, False]
    """
    if first == second or abs(len(first) - len(second)) > 1:
        return False
    if _DIGITS.sub("0", first) == _DIGITS.sub("0", second):
        return False
    if len(first) == len(second):
        apart = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
        return len(apart) == 1 or (
            len(apart) == 2
            and apart[1] == apart[0] + 1
            and first[apart[0]] == second[apart[1]]
            and first[apart[1]] == second[apart[0]]
        )
    short, long = sorted((first, second), key=len)
    at = next((i for i, (a, b) in enumerate(zip(short, long, strict=False)) if a != b), len(short))
    return short[at:] == long[at + 1 :]


_DIGITS = re.compile(r"\d+")
