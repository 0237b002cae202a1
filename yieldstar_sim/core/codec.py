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
import re
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

import rfc8785

if TYPE_CHECKING:
    from collections.abc import Iterator

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

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer magnitude a JSON number (an IEEE 754 double) holds exactly."""

MAX_DEPTH = 200
"""The deepest nesting of lists and dicts a durable value may have."""

MAX_EXPANDED_VALUES = 10_000_000
"""The most values a durable value may hold once shared references are written out."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_IDENTIFIER = re.compile("[A-Za-z_][A-Za-z0-9_]*")
_MAX_KEY_IN_PATH = 60
_MAX_REPR = 40
# Refused types whose JSON spelling is a list.
_LIST_LIKE = (tuple, set, frozenset)
# Checked in this order, so a class deriving from several reports the first.
_PLAIN_BASES: tuple[type, ...] = (dict, list, str, int, float)
_TYPE_MODULE: Any = type.__dict__["__module__"]
_TYPE_QUALNAME: Any = type.__dict__["__qualname__"]
_METHOD_TYPES = (types.MethodType, types.MethodWrapperType)
_FUNCTION_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)


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


class _Frame:
    """A list or dict being walked by :class:`_Walk`."""

    __slots__ = ("container", "height", "items", "path_len", "size")

    def __init__(self, container: list[object] | dict[object, object], path_len: int) -> None:
        self.container = container
        self.items: Iterator[tuple[object, object]] = (
            iter(container.items()) if type(container) is dict else enumerate(container)
        )
        # len(path) while this container is the current value.
        self.path_len = path_len
        # Nesting height of the deepest child container walked so far.
        self.height = 0
        # Values held once shared references are written out, this one included.
        self.size = 1


def _find_invalid(root: object, root_path: str) -> str | None:
    """Return the message for the first invalid path in ``root``, or None if it is durable."""
    return _inspect(root, root_path)[0]


def _inspect(root: object, root_path: str) -> tuple[str | None, bool]:
    """``_find_invalid``'s message, and whether a durable ``root`` is *plain*: it holds no
    float and no object key with a character beyond U+FFFF.

    A plain value's RFC 8785 form is exactly what ``json`` writes with sorted keys, no
    spaces and no ASCII escaping (the same escapes; integers as digits; code-point order of
    keys is their UTF-16 order below U+10000), in C, ten times faster than ``rfc8785``.

    >>> _inspect({"a": [1, "x"]}, "value"), _inspect({"a": 0.5}, "value")
    ((None, True), (None, False))
    """
    kind = type(root)
    if root is None or kind is bool:
        return None, True
    if kind is int or kind is float or kind is str:
        # A scalar needs no walk: the same check as ``_Walk.visit``, without its set-up.
        message = _scalar_problem(root)
        return (None if message is None else f"{root_path}: {message}"), kind is not float
    quick = _quick_check(root, 0, [0])
    if quick >= 0:
        return None, quick == 1
    walk = _Walk(root_path)  # a problem, or a value too big or deep for the quick check
    message = walk.run(root)
    return message, walk.plain


#: Values a quick check looks at before it leaves a value to ``_Walk``.
_QUICK_LIMIT = 10_000


def _quick_check(value: object, ancestors: int, seen: list[int]) -> int:
    """1 if ``value`` is durable and plain, 0 if durable and not plain, -1 if only ``_Walk``
    can tell (a problem to name, a cycle, or more than ``_QUICK_LIMIT`` values).

    ``_Walk`` keeps a path for its messages at every item; most values are small and fine,
    and this recursion without paths answers for them in a third of the time. It accepts
    only what ``_Walk`` accepts: the same scalar and key rules, containers fewer than
    ``MAX_DEPTH`` deep (a cycle runs into that), and fewer values than ``_QUICK_LIMIT`` (far
    below ``MAX_EXPANDED_VALUES``), shared references counted each time.
    """
    seen[0] += 1
    kind = type(value)
    if value is None or kind is bool:
        return 1
    if kind is str:
        return 1 if _SURROGATE.search(value) is None else -1  # type: ignore[call-overload]
    if kind is int:
        return 1 if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else -1  # type: ignore[operator]
    if kind is float:
        return 0 if math.isfinite(value) else -1  # type: ignore[arg-type]
    if (kind is not list and kind is not dict) or ancestors >= MAX_DEPTH or seen[0] > _QUICK_LIMIT:
        return -1
    plain = 1
    if kind is dict:
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str or _SURROGATE.search(key) is not None:
                return -1
            if plain and not key.isascii() and max(key) > "\uffff":
                plain = 0
            answer = _quick_check(item, ancestors + 1, seen)
            if answer < 0:
                return -1
            plain &= answer
        return plain
    for item in value:  # type: ignore[attr-defined]
        answer = _quick_check(item, ancestors + 1, seen)
        if answer < 0:
            return -1
        plain &= answer
    return plain


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


class _Walk:
    """One depth-first validation of a value: children in list order, dicts in insertion order.

    Iterative, so a deep value can never exhaust the interpreter stack. A list or
    dict seen before (a shared reference) is not walked again unless its nesting
    could now exceed :data:`MAX_DEPTH`, so shared references cannot make this
    exponential.
    """

    __slots__ = ("on_path", "path", "plain", "stack", "walked")

    def __init__(self, root_path: str) -> None:
        # No float and no key beyond U+FFFF seen so far (``_inspect``).
        self.plain = True
        # Segments of the path of the item being visited; joined only for messages.
        self.path = [root_path]
        self.stack: list[_Frame] = []
        # id of each container being walked -> its path_len: how cycles are found.
        self.on_path: dict[int, int] = {}
        # id of each container found valid -> (height, size), for shared references.
        self.walked: dict[int, tuple[int, int]] = {}

    def run(self, root: object) -> str | None:
        """Walk ``root``; return the first problem's message, or None."""
        value = root
        while True:
            done = self.visit(value)
            if isinstance(done, str):
                return done
            height, size = done
            # Find the next item, finishing every container that has none left.
            while True:
                if size:
                    if not self.stack:
                        return None
                    message = self.add_to_parent(height, size)
                    if message is not None:
                        return message
                frame = self.stack[-1]
                item = next(frame.items, None)
                if item is not None:
                    break
                self.stack.pop()
                cid = id(frame.container)
                del self.on_path[cid]
                height, size = frame.height + 1, frame.size
                self.walked[cid] = (height, size)
            key, value = item
            if type(frame.container) is not dict:
                self.path.append(f"[{key}]")
                continue
            message = _key_problem(key)
            if message is not None:
                return f"{self.here()}: {message}"
            text = cast("str", key)
            if self.plain and not text.isascii() and max(text) > "\uffff":
                self.plain = False  # its UTF-16 order is not its code-point order
            self.path.append(_key_segment(text))

    def visit(self, value: object) -> str | tuple[int, int]:
        """Check the item at ``self.path``.

        Return a problem's message; or the item's (height, size) if it needs no
        walking; or (0, 0) after pushing a container to walk.
        """
        kind = type(value)
        if value is None or kind is bool:
            return (0, 1)
        if kind is int or kind is float or kind is str:
            if kind is float:
                self.plain = False
            message = _scalar_problem(value)
            return (0, 1) if message is None else f"{self.here()}: {message}"
        if kind is not list and kind is not dict:
            return f"{self.here()}: {_refusal(value)}"
        cid = id(value)
        start = self.on_path.get(cid)
        if start is not None:
            return f"{self.here()}: reference cycle back to {''.join(self.path[:start])}"
        known = self.walked.get(cid)
        if known is not None and len(self.stack) + known[0] <= MAX_DEPTH:
            return known
        if len(self.stack) >= MAX_DEPTH:
            return (
                f"{self.here()}: {kind.__name__} is not a durable value: "
                f"nested deeper than {MAX_DEPTH} levels"
            )
        self.on_path[cid] = len(self.path)
        self.stack.append(
            _Frame(cast("list[object] | dict[object, object]", value), len(self.path))
        )
        return (0, 0)

    def add_to_parent(self, height: int, size: int) -> str | None:
        """Account a finished child to the innermost container, then leave the child."""
        parent = self.stack[-1]
        parent.height = max(parent.height, height)
        parent.size += size
        del self.path[parent.path_len :]
        if parent.size > MAX_EXPANDED_VALUES:
            return (
                f"{self.here()}: {type(parent.container).__name__} is not a durable value: "
                f"it holds more than {MAX_EXPANDED_VALUES} values "
                "once shared references are written out"
            )
        return None

    def here(self) -> str:
        """Return the path of the item being visited, e.g. ``params.items[2]``."""
        return "".join(self.path)


def _scalar_problem(value: object) -> str | None:
    """Return why an exact int, float or str is not durable, or None if it is."""
    if type(value) is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return None
        return (
            f"int {_int_text(value)} is not a durable value: "
            "outside the exactly representable range ±(2**53-1)"
        )
    if type(value) is float:
        if math.isfinite(value):
            return None
        return f"float {value!r} is not a durable value"
    match = _SURROGATE.search(cast("str", value))
    if match is None:
        return None
    return f"str with a lone surrogate at index {match.start()} is not a durable value"


def _key_problem(key: object) -> str | None:
    """Return why ``key`` cannot be an object key, or None if it can."""
    if type(key) is not str:
        plain = "strings" if not issubclass(type(key), str) else "plain strings, not str subclasses"
        return (
            f"dict key {_safe_repr(key)} ({_kind(key)}) is not a durable value: "
            f"object keys must be {plain}"
        )
    match = _SURROGATE.search(key)
    if match is None:
        return None
    return (
        f"dict key {_quote(key)} with a lone surrogate at index {match.start()} "
        "is not a durable value"
    )


def _key_segment(key: str) -> str:
    """Return the path segment for dict key ``key``: ``.key`` or ``["key"]``."""
    if len(key) <= _MAX_KEY_IN_PATH and _IDENTIFIER.fullmatch(key):
        return f".{key}"
    return f"[{_quote(key)}]"


def _quote(key: str) -> str:
    """JSON-quote ``key`` for a message, shortened, with lone surrogates escaped."""
    short = key[:_MAX_KEY_IN_PATH]
    quoted = json.dumps(short, ensure_ascii=_SURROGATE.search(short) is not None)
    return quoted if len(short) == len(key) else f"{quoted}..."


def _refusal(value: object) -> str:
    """Return ``"<what> is not a durable value[: why]"`` for a value of a refused type."""
    kind = type(value)
    for base in _PLAIN_BASES:
        if issubclass(kind, base):
            if issubclass(kind, _LIST_LIKE):
                break
            return (
                f"{_type_name(kind)} (a subclass of {base.__name__}) is not a durable value: "
                f"only plain {base.__name__} is accepted"
            )
    if issubclass(kind, _LIST_LIKE):
        return f"{_type_name(kind)} is not a durable value (use a list)"
    if issubclass(kind, _FUNCTION_TYPES):
        name = getattr(value, "__qualname__", None)
        label = "method" if issubclass(kind, _METHOD_TYPES) else "function"
        if type(name) is str:
            return f"{label} {name} is not a durable value"
        return f"{label} is not a durable value"
    if issubclass(kind, type):
        return f"class {_type_name(cast('type', value))} is not a durable value"
    return f"{_type_name(kind)} is not a durable value"


def _kind(value: object) -> str:
    """Name the type of ``value`` for a message: ``None``, ``int``, ``datetime.datetime``."""
    if value is None:
        return "None"
    return _type_name(type(value))


def _type_name(kind: type) -> str:
    """Return ``qualname`` for builtins and ``module.qualname`` otherwise."""
    # Read through `type`'s own descriptors: a metaclass or class body may bind
    # __module__ or __qualname__ to anything, including properties that raise.
    try:
        module = _TYPE_MODULE.__get__(kind, type)
    except Exception:
        module = None
    try:
        qualname = _TYPE_QUALNAME.__get__(kind, type)
    except Exception:
        qualname = None
    if type(qualname) is not str:
        qualname = "<unnamed type>"
    if type(module) is not str or module == "builtins":
        return qualname
    return f"{module}.{qualname}"


def _int_text(value: int) -> str:
    """Write an int for a message without tripping the int-to-str digit limit."""
    if value.bit_length() <= 128:
        return str(value)
    return f"with {value.bit_length()} bits"


def _safe_repr(value: object) -> str:
    """Return a short ``repr`` of ``value``, or its type name if ``repr`` misbehaves."""
    if type(value) is int:
        return str(value) if value.bit_length() <= 128 else f"<int with {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception:
        text = None
    if type(text) is not str:
        return f"<{_kind(value)} object>"
    if _SURROGATE.search(text):
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= _MAX_REPR else f"{text[: _MAX_REPR - 3]}..."


def _exception_name(exc: BaseException) -> str:
    """Name an exception's type, even if the type is hostile."""
    try:
        return _type_name(type(exc))
    except Exception:
        return "an exception"


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
