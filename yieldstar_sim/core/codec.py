"""The durable value codec (RFC 003, durable workflow start; RFC 011, decode).

Every durable value -- workflow parameters, step results, workflow results and
error data -- goes through :data:`durable_value_codec`. ``encode`` validates the
value recursively and returns either its canonical JSON (RFC 8785, the JSON
Canonicalization Scheme) or a message naming the first invalid path;
``decode`` is its inverse.

>>> durable_value_codec.encode({"b": 1, "a": [True, None, 1.0]})
EncodedValue(canonical='{"a":[true,null,1],"b":1}', status='encoded')
>>> durable_value_codec.encode({"when": (1, 2)}, path="params").message
'params.when: tuple is not a durable value (use a list)'
>>> durable_value_codec.decode('{"a":[true,null,1],"b":1}')
{'a': [True, None, 1], 'b': 1}
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

import rfc8785

from yieldstar_sim.core.codec_checks import (
    _MAX_REPR,
    MAX_DEPTH,
    MAX_EXPANDED_VALUES,
    MAX_SAFE_INTEGER,
    _exception_name,
    _find_invalid,
    _inspect,
    _kind,
    _quote,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_VALUES",
    "MAX_SAFE_INTEGER",
    "DurableObject",
    "DurableValue",
    "DurableValueCodec",
    "DurableValueEncoding",
    "DurableValueError",
    "EncodedValue",
    "InvalidValue",
    "durable_value_codec",
]

DurableValue: TypeAlias = (
    bool | int | float | str | list["DurableValue"] | dict[str, "DurableValue"] | None
)
"""A value that may cross a durability boundary: JSON's data model, in Python."""

DurableObject: TypeAlias = dict[str, DurableValue]
"""A durable value whose top level is an object, e.g. workflow start parameters."""


@dataclass(frozen=True, slots=True)
class EncodedValue:
    """A valid durable value, as its canonical (RFC 8785) JSON text."""

    canonical: str
    status: Literal["encoded"] = "encoded"


@dataclass(frozen=True, slots=True)
class InvalidValue:
    """A value refused by the codec; ``message`` names the first invalid path and why."""

    message: str
    status: Literal["invalid"] = "invalid"


DurableValueEncoding: TypeAlias = EncodedValue | InvalidValue
"""The result of :meth:`DurableValueCodec.encode`: tell the cases apart by ``status``."""


class DurableValueError(ValueError):
    """A value or JSON text that is not durable; ``str(error)`` is the message."""

    def __init__(self, message: str) -> None:
        """Create the error; ``message`` is also available as ``error.message``."""
        super().__init__(message)
        self.message = message


class DurableValueCodec:
    """Validates, canonicalises and decodes durable values.

    Use the module-level instance :data:`durable_value_codec`; the codec has no
    state, so it is safe to share between threads.

    >>> codec = DurableValueCodec()
    >>> codec.encode_or_raise({"n": -0.0, "m": 1e21})
    '{"m":1e+21,"n":0}'
    >>> codec.encode(float("nan"), path="result").message
    'result: float nan is not a durable value'
    >>> codec.validate_object([1], path="params").message
    'params: list is not a durable object: start parameters must be an object'
    """

    def encode(self, value: object, *, path: str = "value") -> DurableValueEncoding:
        """Validate ``value`` and return its canonical JSON, or why it is invalid.

        ``path`` names the value in messages (e.g. ``"params"``). Never raises:
        anything unexpected while inspecting ``value`` becomes an
        :class:`InvalidValue`.
        """
        encoded = _encoded(value, path)
        return encoded if isinstance(encoded, InvalidValue) else EncodedValue(encoded[0])

    def round_trip(
        self, value: object, *, path: str = "value"
    ) -> tuple[str, DurableValue] | InvalidValue:
        """Validate ``value``; return its canonical JSON and the value decoding that JSON gives
        back (what a reader of the stored value sees: object keys in canonical order, new
        containers), or why it is invalid. Never raises, like :meth:`encode`.

        The same as ``encode`` then ``decode``, without parsing the JSON for a plain value
        (no float, no key beyond U+FFFF), whose decoded form is a copy with sorted keys.

        >>> codec = DurableValueCodec()
        >>> codec.round_trip({"b": [1], "a": "x"})
        ('{"a":"x","b":[1]}', {'a': 'x', 'b': [1]})
        >>> codec.round_trip(float("inf")).message
        'value: float inf is not a durable value'
        """
        encoded = _encoded(value, path)
        if isinstance(encoded, InvalidValue):
            return encoded
        canonical, plain = encoded
        return canonical, _canonical_copy(value) if plain else self.decode_trusted(canonical)

    def encode_or_raise(self, value: object, *, path: str = "value") -> str:
        """Like :meth:`encode`, but return the canonical JSON or raise :class:`DurableValueError`.

        The error's message is the :class:`InvalidValue` message ``encode`` would return.
        """
        result = self.encode(value, path=path)
        if isinstance(result, InvalidValue):
            raise DurableValueError(result.message)
        return result.canonical

    def decode(self, canonical: str) -> DurableValue:
        """Parse durable JSON back into a value: the inverse of :meth:`encode`.

        Accepts any valid JSON text, canonical or not, and returns a value that
        encodes again. Integers beyond ``±(2**53-1)`` decode as ``float``.
        Raises :class:`DurableValueError` for text that is not JSON, NaN or
        Infinity constants, duplicate object keys, numbers too large for a
        double, lone surrogates, and nesting deeper than :data:`MAX_DEPTH`.
        """
        if type(canonical) is not str:
            raise DurableValueError(
                f"cannot decode durable value: expected str, got {_kind(canonical)}"
            )
        try:
            value = json.loads(
                canonical,
                object_pairs_hook=_unique_keys_object,
                parse_int=_parse_int,
                parse_float=_parse_float,
                parse_constant=_refuse_constant,
            )
        except DurableValueError:
            raise
        except RecursionError:
            raise DurableValueError(
                f"cannot decode durable value: nested deeper than {MAX_DEPTH} levels"
            ) from None
        except ValueError as exc:
            raise DurableValueError(f"cannot decode durable value: not valid JSON: {exc}") from exc
        message = _find_invalid(value, "value")
        if message is not None:
            raise DurableValueError(f"cannot decode durable value: {message}")
        return cast("DurableValue", value)

    def decode_trusted(self, canonical: str) -> DurableValue:
        """Decode text that this codec encoded (e.g. a runtime reading back what it stored).

        Skips the validation walk that :meth:`decode` makes over untrusted input; the result is
        the same for anything :meth:`encode` produced.
        """
        # One decoder for every call: json.loads with a hook builds a new one each time, which
        # cost as much as decoding a small value (the C scanner holds the GIL: shareable).
        return cast("DurableValue", _TRUSTED_DECODER.decode(canonical))

    def validate_object(self, value: object, *, path: str = "params") -> DurableValueEncoding:
        """Like :meth:`encode`, but the top level must be a plain ``dict``.

        Used for workflow start parameters, which RFC 003 requires to be an object.
        """
        root = path if type(path) is str else "params"
        if type(value) is not dict:
            try:
                kind = _kind(value)
            except Exception:
                kind = "value"
            return InvalidValue(
                f"{root}: {kind} is not a durable object: start parameters must be an object"
            )
        return self.encode(value, path=root)


durable_value_codec = DurableValueCodec()
"""The codec instance to use: ``from yieldstar_sim.core.codec import durable_value_codec``."""


#: RFC 8785 for plain values (``_inspect``): validated first, so no cycle check.
_PLAIN_JSON = json.JSONEncoder(
    ensure_ascii=False, check_circular=False, sort_keys=True, separators=(",", ":")
)


def _encoded(value: object, path: object) -> tuple[str, bool] | InvalidValue:
    """``value``'s canonical JSON and whether it is plain (``_inspect``), or why it is not
    durable: what ``encode`` and ``round_trip`` share. Never raises."""
    root = path if type(path) is str else "value"
    try:
        message, plain = _inspect(value, root)
        if message is not None:
            return InvalidValue(message)
        if plain:
            return _plain_json(value), True
        canonical: bytes = rfc8785.dumps(cast("DurableValue", value))
        return canonical.decode("utf-8"), False
    except Exception as exc:
        return InvalidValue(
            f"{root}: value is not a durable value: {_exception_name(exc)} raised while encoding it"
        )


def _never(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON")  # a validated value never gets here


# ``JSONEncoder.encode`` builds its C encoder again on every call, which cost as much as
# encoding a small value: this one is built once, with ``_PLAIN_JSON``'s settings.
_C_PLAIN: Any = (
    None
    if json.encoder.c_make_encoder is None  # type: ignore[attr-defined]
    else json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, _never, json.encoder.encode_basestring, None, ":", ",", True, False, True
    )
)


def _plain_json(value: object) -> str:
    """``_PLAIN_JSON.encode(value)`` for a value ``_inspect`` found durable and plain.

    >>> _plain_json({"b": [1, "é"], "a": None}) == _PLAIN_JSON.encode({"b": [1, "é"], "a": None})
    True
    """
    if _C_PLAIN is None or type(value) is str:
        return _PLAIN_JSON.encode(value)
    return "".join(_C_PLAIN(value, 0))


def _canonical_copy(value: object) -> Any:
    """What decoding a plain value's canonical JSON gives: the same scalars, new containers,
    object keys in sorted order (code-point order, the canonical one for a plain value)."""
    kind = type(value)
    if kind is dict:
        return {key: _canonical_copy(value[key]) for key in sorted(value)}  # type: ignore[index, call-overload]
    if kind is list:
        return [_canonical_copy(item) for item in value]  # type: ignore[attr-defined]
    return value


def _unique_keys_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json`` object hook: build a dict, refusing duplicate keys."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DurableValueError(
                    f"cannot decode durable value: duplicate object key {_quote(key)}"
                )
            seen.add(key)
    return obj


def _parse_int(text: str) -> int | float:
    """``json`` int hook: exact ints within ``±(2**53-1)``, floats beyond it."""
    # Up to 17 characters parse cheaply; anything longer is beyond the range anyway.
    if len(text) <= 17:
        number = int(text)
        if -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
            return number
    return _parse_float(text)


def _parse_float(text: str) -> float:
    """``json`` float hook: refuse numbers that overflow a double."""
    number = float(text)
    if not math.isfinite(number):
        shown = text if len(text) <= _MAX_REPR else f"{text[: _MAX_REPR - 3]}..."
        raise DurableValueError(
            f"cannot decode durable value: number {shown} is outside the range of a double"
        )
    return number


def _refuse_constant(name: str) -> float:
    """``json`` constant hook: NaN, Infinity and -Infinity are not JSON."""
    raise DurableValueError(f"cannot decode durable value: {name} is not a durable value")


_TRUSTED_DECODER = json.JSONDecoder(parse_int=_parse_int)
"""The decoder of ``decode_trusted`` (made once: ``json.loads`` with a hook makes one a call)."""
