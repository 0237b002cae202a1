"""Values as the trace keeps them: small ones as they are, a large one (over
``TRACE_VALUE_LIMIT`` bytes of canonical JSON) as its digest and size, and each as a short
summary for the trace's text.

>>> summary({"order": 42})
"{'order': 42}"
>>> traced("x" * 5000)[1][:7], traced("x" * 5000)[2]
('sha256:', 5002)
"""

from __future__ import annotations

import hashlib

from yieldstar_sim.core.codec import MAX_DEPTH, EncodedValue, durable_value_codec
from yieldstar_sim.core.codec_checks import _kind

TRACE_VALUE_LIMIT = 4096
"""Bytes of canonical JSON above which a value is kept out of the trace: the trace holds its
digest and size, the runtime's records hold the value."""


_INT_BOUND = 2**63


def size_bound(value: object, budget: int, depth: int = 0) -> int | None:
    """An upper bound on the bytes of ``value``'s canonical JSON, or None when it passes
    ``budget``, holds a type this does not know, or is nested ``MAX_DEPTH`` deep (a reference
    cycle is too): then only encoding it can tell.

    Encoding a value to learn that it is small cost about a tenth of a whole memory run;
    most trace values are far below the limit, and a string's canonical form is at most 6
    bytes a character (``\\u00XX``) plus its quotes."""
    kind = type(value)
    if kind is str:
        return 6 * len(value) + 2  # type: ignore[arg-type]
    if value is None or kind is bool or kind is float:
        return 25  # the longest ECMAScript number, ``-1.2345678901234567e-308``
    if kind is int:
        return 25 if -_INT_BOUND < value < _INT_BOUND else None  # type: ignore[operator]
    if depth >= MAX_DEPTH:  # deeper than a durable value may be: the codec says where
        return None
    if kind is dict:
        total = 2
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                return None
            inner = size_bound(item, budget - total, depth + 1)
            if inner is None:
                return None
            total += 6 * len(key) + 4 + inner
            if total > budget:
                return None
        return total
    if kind is list or kind is tuple:
        total = 2
        for item in value:  # type: ignore[attr-defined]
            inner = size_bound(item, budget - total, depth + 1)
            if inner is None:
                return None
            total += inner + 1
            if total > budget:
                return None
        return total
    return None


def too_large(value: object) -> tuple[str, int] | None:
    """``(digest, size)`` of a value too big for the trace, or ``None`` to keep it there."""
    bound = size_bound(value, TRACE_VALUE_LIMIT)
    if bound is not None and bound <= TRACE_VALUE_LIMIT:
        return None  # small, durable or not: kept in the trace either way
    encoded = durable_value_codec.encode(value)
    if not isinstance(encoded, EncodedValue):
        return None  # not durable: the runtime refuses it, and says why
    raw = encoded.canonical.encode()
    if len(raw) <= TRACE_VALUE_LIMIT:
        return None
    return "sha256:" + hashlib.sha256(raw).hexdigest(), len(raw)


def traced(value: object) -> tuple[object, str | None, int | None]:
    """A value as trace data: ``(value, None, None)``, or ``(None, digest, size)`` when it is
    large."""
    large = too_large(value)
    if large is None:
        return value, None, None
    return None, *large


def summary(value: object) -> str:
    """A value in at most 80 characters for the trace's text (a large one as its size and
    digest, one that is not durable as its type: the runtime refuses it, naming where).

    Only plain data is written with ``repr``: another object's ``repr`` is user code that
    may raise, hang or recurse without end, and a value nested 100,000 deep is beyond
    ``repr`` too.

    >>> summary([1, "two"]), summary(object())
    ("[1, 'two']", '<object: not a durable value>')
    """
    bound = size_bound(value, TRACE_VALUE_LIMIT)
    if bound is None or bound > TRACE_VALUE_LIMIT:
        encoded = durable_value_codec.encode(value)
        if not isinstance(encoded, EncodedValue):
            return f"<{_kind(value)}: not a durable value>"
        raw = encoded.canonical.encode()
        if len(raw) > TRACE_VALUE_LIMIT:
            return f"<{len(raw)} bytes, sha256:{hashlib.sha256(raw).hexdigest()[:12]}>"
    text = repr(value)  # plain data, nested less than MAX_DEPTH deep
    return text if len(text) <= 80 else text[:77] + "..."
