"""'Did you mean ...?': the nearest of the names a user could have meant, for error messages.

>>> did_you_mean("durable-strat", ["durable-start", "frozen-worker"])
" (did you mean 'durable-start'?)"
>>> did_you_mean("zzz", ["durable-start"])
''
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


def nearest(word: str, options: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The option closest to ``word`` in spelling, if any is close (``difflib``'s ratio of at
    least ``cutoff``, with ``_`` and ``-`` counted alike).

    >>> nearest("courier.bookd", ["card.charged", "courier.booked"], cutoff=0.8)
    'courier.booked'
    >>> nearest("refund.issued", ["card.charged", "courier.booked"], cutoff=0.8) is None
    True
    """
    by_key = {str(option).replace("_", "-"): str(option) for option in options}
    found = difflib.get_close_matches(word.replace("_", "-"), list(by_key), n=1, cutoff=cutoff)
    return by_key[found[0]] if found else None


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the option nearest ``word``, or ``""`` when none is
    near: to follow the name that was not found in an error message."""
    match = nearest(word, options)
    return "" if match is None else f" (did you mean {match!r}?)"
