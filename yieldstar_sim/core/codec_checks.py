"""What makes a value durable, and the message naming the first part of one that is not: the
codec's validation (``codec.py`` encodes and decodes what passes it).

A value is durable when it is JSON's data model in Python's exact types: None, bool, an int
within ±(2**53-1), a finite float, a str without lone surrogates, a list, or a dict with str
keys, nested fewer than ``MAX_DEPTH`` deep and holding fewer than ``MAX_EXPANDED_VALUES`` values
once shared references are written out.

>>> _inspect({"a": [1, "x"]}, "params")
(None, True)
>>> _inspect({"when": (1, 2)}, "params")[0]
'params.when: tuple is not a durable value (use a list)'
"""

from __future__ import annotations

import json
import math
import re
import types
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Iterator

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
