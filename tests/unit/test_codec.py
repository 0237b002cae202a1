"""Tests for the durable value codec (RFC 003 durable workflow start, RFC 011 decode)."""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import fractions
import json
import math
import uuid
from typing import Any, NamedTuple, cast

import hypothesis.strategies as st
import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings

from yieldstar_sim.core import codec as codec_module
from yieldstar_sim.core.codec import (
    MAX_DEPTH,
    MAX_EXPANDED_VALUES,
    MAX_SAFE_INTEGER,
    DurableValue,
    DurableValueCodec,
    DurableValueError,
    EncodedValue,
    InvalidValue,
    durable_value_codec,
)

codec = durable_value_codec

deterministic = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def invalid_message(value: object, *, path: str = "value") -> str:
    """Encode ``value``, assert it is refused, and return the message."""
    result = codec.encode(value, path=path)
    assert isinstance(result, InvalidValue), result
    assert result.status == "invalid"
    return result.message


def canonical(value: object) -> str:
    """Encode ``value``, assert it is accepted, and return the canonical JSON."""
    result = codec.encode(value)
    assert isinstance(result, EncodedValue), result
    assert result.status == "encoded"
    return result.canonical


def nested_lists(depth: int) -> list[Any]:
    """Return ``depth`` lists, each the only item of the one before."""
    outer: list[Any] = []
    inner = outer
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    return outer


# --- accepted kinds -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, "null", id="None"),
        pytest.param(True, "true", id="True"),
        pytest.param(False, "false", id="False"),
        pytest.param(0, "0", id="int-zero"),
        pytest.param(-42, "-42", id="int-negative"),
        pytest.param(MAX_SAFE_INTEGER, "9007199254740991", id="int-max-safe"),
        pytest.param(-MAX_SAFE_INTEGER, "-9007199254740991", id="int-min-safe"),
        pytest.param(1.5, "1.5", id="float"),
        pytest.param(1e300, "1e+300", id="float-large"),
        pytest.param(5e-324, "5e-324", id="float-subnormal"),
        pytest.param("", '""', id="str-empty"),
        pytest.param("héllo", '"héllo"', id="str-non-ascii"),
        pytest.param("\U0001f600", '"\U0001f600"', id="str-astral"),
        pytest.param([], "[]", id="list-empty"),
        pytest.param({}, "{}", id="dict-empty"),
        pytest.param([1, "a", None], '[1,"a",null]', id="list"),
        pytest.param({"k": {"j": [False]}}, '{"k":{"j":[false]}}', id="dict-nested"),
    ],
)
def test_accepted_kind_encodes_and_decodes(value: object, expected: str) -> None:
    assert canonical(value) == expected
    assert codec.decode(expected) == value


# --- exact canonical strings ----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            {"b": 1, "a": [True, None, "x"]}, '{"a":[true,null,"x"],"b":1}', id="sorted-keys"
        ),
        pytest.param(1.0, "1", id="integral-float"),
        pytest.param(-0.0, "0", id="negative-zero"),
        pytest.param(1e21, "1e+21", id="1e21"),
        pytest.param(1e20, "100000000000000000000", id="1e20"),
        pytest.param(1e-7, "1e-7", id="1e-7"),
        pytest.param(1e-6, "0.000001", id="1e-6"),
        pytest.param(0.1, "0.1", id="0.1"),
        pytest.param(-1.25, "-1.25", id="negative-float"),
        pytest.param("é中\U0001f600", '"é中\U0001f600"', id="non-ascii-unescaped"),
        pytest.param('\x00\x1f\n\t"\\\x7f', '"\\u0000\\u001f\\n\\t\\"\\\\\x7f"', id="escapes"),
        # U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FFFF (unlike by code point).
        pytest.param(
            {"\uffff": 1, "\U0001f600": 2}, '{"\U0001f600":2,"\uffff":1}', id="utf16-order"
        ),
        pytest.param({"b": 1, "B": 2, "a": 3, "": 4}, '{"":4,"B":2,"a":3,"b":1}', id="key-order"),
        pytest.param([1, 1.0, 2.5e15], "[1,1,2500000000000000]", id="numbers-in-list"),
    ],
)
def test_canonical_string(value: object, expected: str) -> None:
    assert canonical(value) == expected


def test_integral_float_and_int_encode_the_same() -> None:
    assert canonical({"n": 1.0}) == canonical({"n": 1})


def test_parameter_objects_with_different_key_order_give_the_same_canonical_string() -> None:
    first = {"order": 7, "customer": {"name": "Ada", "tier": "gold"}, "items": [1, 2]}
    second = {"items": [1, 2], "customer": {"tier": "gold", "name": "Ada"}, "order": 7}
    assert canonical(first) == canonical(second)
    assert codec.validate_object(first) == codec.validate_object(second)


def test_canonical_json_is_what_rfc8785_writes() -> None:
    value = {"z": [0.5, 123456789012345.6, -7], "y": "\u2028"}
    assert canonical(value) == rfc8785.dumps(value).decode("utf-8")


# --- refused kinds --------------------------------------------------------------


class Color(enum.IntEnum):
    RED = 1


class Shade(enum.StrEnum):
    DARK = "dark"


# The spelling before StrEnum existed; still common, and must be refused too.
class Mood(str, enum.Enum):  # noqa: UP042
    HAPPY = "happy"


class Plain(enum.Enum):
    ONE = 1


class Point(NamedTuple):
    x: int
    y: int


class MyFloat(float):
    pass


class MyList(list[int]):
    pass


class Thing:
    def method(self) -> None:
        pass


def a_function() -> None:
    pass


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(float("nan"), "value: float nan is not a durable value", id="nan"),
        pytest.param(float("inf"), "value: float inf is not a durable value", id="inf"),
        pytest.param(float("-inf"), "value: float -inf is not a durable value", id="-inf"),
        pytest.param(
            2**53,
            "value: int 9007199254740992 is not a durable value: "
            "outside the exactly representable range ±(2**53-1)",
            id="int-2**53",
        ),
        pytest.param(
            -(2**53),
            "value: int -9007199254740992 is not a durable value: "
            "outside the exactly representable range ±(2**53-1)",
            id="int-minus-2**53",
        ),
        pytest.param(
            10**5000,
            "value: int with 16610 bits is not a durable value: "
            "outside the exactly representable range ±(2**53-1)",
            id="int-huge",
        ),
        pytest.param((1, 2), "value: tuple is not a durable value (use a list)", id="tuple"),
        pytest.param({1}, "value: set is not a durable value (use a list)", id="set"),
        pytest.param(
            frozenset({1}), "value: frozenset is not a durable value (use a list)", id="frozenset"
        ),
        pytest.param(
            Point(1, 2),
            f"value: {__name__}.Point is not a durable value (use a list)",
            id="namedtuple",
        ),
        pytest.param(b"x", "value: bytes is not a durable value", id="bytes"),
        pytest.param(bytearray(b"x"), "value: bytearray is not a durable value", id="bytearray"),
        pytest.param(memoryview(b"x"), "value: memoryview is not a durable value", id="memoryview"),
        pytest.param(
            datetime.datetime(2024, 1, 1),
            "value: datetime.datetime is not a durable value",
            id="datetime",
        ),
        pytest.param(
            datetime.date(2024, 1, 1), "value: datetime.date is not a durable value", id="date"
        ),
        pytest.param(
            datetime.timedelta(1),
            "value: datetime.timedelta is not a durable value",
            id="timedelta",
        ),
        pytest.param(
            decimal.Decimal("1.5"), "value: decimal.Decimal is not a durable value", id="Decimal"
        ),
        pytest.param(
            fractions.Fraction(1, 3),
            "value: fractions.Fraction is not a durable value",
            id="Fraction",
        ),
        pytest.param(1j, "value: complex is not a durable value", id="complex"),
        pytest.param(uuid.UUID(int=0), "value: uuid.UUID is not a durable value", id="UUID"),
        pytest.param(
            a_function, "value: function a_function is not a durable value", id="function"
        ),
        pytest.param(lambda: None, "value: function <lambda> is not a durable value", id="lambda"),
        pytest.param(len, "value: function len is not a durable value", id="builtin-function"),
        pytest.param(
            "abc".upper, "value: function str.upper is not a durable value", id="builtin-method"
        ),
        pytest.param(
            Thing().method, "value: method Thing.method is not a durable value", id="method"
        ),
        pytest.param(
            Thing().__str__,
            "value: method object.__str__ is not a durable value",
            id="slot-wrapper",
        ),
        pytest.param(Thing, f"value: class {__name__}.Thing is not a durable value", id="class"),
        pytest.param(int, "value: class int is not a durable value", id="builtin-class"),
        pytest.param(Thing(), f"value: {__name__}.Thing is not a durable value", id="object"),
        pytest.param(object(), "value: object is not a durable value", id="bare-object"),
        pytest.param(Plain.ONE, f"value: {__name__}.Plain is not a durable value", id="Enum"),
        pytest.param(iter([]), "value: list_iterator is not a durable value", id="iterator"),
        pytest.param(..., "value: ellipsis is not a durable value", id="Ellipsis"),
    ],
)
def test_refused_kind(value: object, expected: str) -> None:
    assert invalid_message(value) == expected


@pytest.mark.parametrize(
    ("value", "kind", "base"),
    [
        pytest.param(Color.RED, f"{__name__}.Color", "int", id="IntEnum"),
        pytest.param(Shade.DARK, f"{__name__}.Shade", "str", id="StrEnum"),
        pytest.param(Mood.HAPPY, f"{__name__}.Mood", "str", id="str-Enum"),
        pytest.param(MyFloat(1.5), f"{__name__}.MyFloat", "float", id="float-subclass"),
        pytest.param(MyList([1]), f"{__name__}.MyList", "list", id="list-subclass"),
        pytest.param(
            collections.OrderedDict(a=1), "collections.OrderedDict", "dict", id="OrderedDict"
        ),
        pytest.param(
            collections.defaultdict(list), "collections.defaultdict", "dict", id="defaultdict"
        ),
        pytest.param(collections.Counter("ab"), "collections.Counter", "dict", id="Counter"),
    ],
)
def test_subclass_of_a_plain_type_is_refused(value: object, kind: str, base: str) -> None:
    assert invalid_message({"x": value}, path="params") == (
        f"params.x: {kind} (a subclass of {base}) is not a durable value: "
        f"only plain {base} is accepted"
    )


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        pytest.param(3, "3 (int)", id="int"),
        pytest.param(1.5, "1.5 (float)", id="float"),
        pytest.param(True, "True (bool)", id="bool"),
        pytest.param(None, "None (None)", id="None"),
        pytest.param((1, "a"), "(1, 'a') (tuple)", id="tuple"),
        pytest.param(b"k", "b'k' (bytes)", id="bytes"),
        pytest.param(frozenset(), "frozenset() (frozenset)", id="frozenset"),
        pytest.param(10**5000, "<int with 16610 bits> (int)", id="huge-int"),
    ],
)
def test_non_string_dict_key_is_refused(key: object, shown: str) -> None:
    assert invalid_message({"ok": 1, key: 2}) == (
        f"value: dict key {shown} is not a durable value: object keys must be strings"
    )


def test_str_subclass_dict_key_is_refused() -> None:
    message = invalid_message({"outer": {Shade.DARK: 1}})
    assert message.startswith(f"value.outer: dict key <Shade.DARK: 'dark'> ({__name__}.Shade)")
    assert message.endswith("object keys must be plain strings, not str subclasses")


def test_long_key_repr_is_shortened() -> None:
    message = invalid_message({tuple(range(100)): 1})
    assert message == (
        "value: dict key (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11... (tuple) "
        "is not a durable value: object keys must be strings"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            ["ok", "a\ud800"],
            "value[1]: str with a lone surrogate at index 1 is not a durable value",
            id="high-in-str",
        ),
        pytest.param(
            {"k": "\udfff"},
            "value.k: str with a lone surrogate at index 0 is not a durable value",
            id="low-in-str",
        ),
        pytest.param(
            # Two surrogate code points are not a pair in a Python str.
            "\ud83d\ude00",
            "value: str with a lone surrogate at index 0 is not a durable value",
            id="split-pair",
        ),
        pytest.param(
            {"a\ud800": 1},
            'value: dict key "a\\ud800" with a lone surrogate at index 1 is not a durable value',
            id="in-key",
        ),
    ],
)
def test_lone_surrogate_is_refused(value: object, expected: str) -> None:
    assert invalid_message(value) == expected


# --- paths ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected_path"),
    [
        pytest.param({"items": [1, 2, float("nan")]}, "params.items[2]", id="list-index"),
        pytest.param({"a_b1": {"C": (1,)}}, "params.a_b1.C", id="identifier-keys"),
        pytest.param({"weird key": (1,)}, 'params["weird key"]', id="space"),
        pytest.param({"1st": (1,)}, 'params["1st"]', id="leading-digit"),
        pytest.param({"": (1,)}, 'params[""]', id="empty-key"),
        pytest.param({"a.b": (1,)}, 'params["a.b"]', id="dot"),
        pytest.param({'q"uote': (1,)}, 'params["q\\"uote"]', id="quote"),
        pytest.param({"é": (1,)}, 'params["é"]', id="non-ascii"),
        pytest.param({"k" * 100: (1,)}, 'params["' + "k" * 60 + '"...]', id="long-key"),
        pytest.param([[{"x": [(1,)]}]], "params[0][0].x[0]", id="mixed"),
    ],
)
def test_message_names_the_path(value: object, expected_path: str) -> None:
    message = invalid_message(value, path="params")
    assert message.startswith(f"{expected_path}: ")
    assert "is not a durable value" in message


def test_when_path_is_named() -> None:
    message = invalid_message({"when": datetime.datetime(2024, 1, 1)}, path="params")
    assert message == "params.when: datetime.datetime is not a durable value"


def test_first_invalid_path_follows_insertion_order() -> None:
    assert invalid_message({"b": float("nan"), "a": (1,)}).startswith("value.b: float nan")
    assert invalid_message({"a": (1,), "b": float("nan")}).startswith("value.a: tuple")
    assert invalid_message([[1, {2}], (3,)]).startswith("value[0][1]: set")


def test_key_is_checked_before_its_value() -> None:
    assert invalid_message({1: (2,)}).startswith("value: dict key 1 (int)")


# --- cycles and shared references ----------------------------------------------


def test_list_containing_itself_is_a_cycle() -> None:
    value: list[Any] = [1]
    value.append(value)
    assert invalid_message(value) == "value[1]: reference cycle back to value"


def test_dict_containing_itself_is_a_cycle() -> None:
    value: dict[str, Any] = {}
    value["self"] = value
    assert invalid_message(value, path="params") == "params.self: reference cycle back to params"


def test_nested_cycle_names_both_paths() -> None:
    inner: dict[str, Any] = {}
    value = {"a": inner}
    inner["b"] = inner
    assert invalid_message(value) == "value.a.b: reference cycle back to value.a"


def test_cycle_through_list_and_dict() -> None:
    inner: list[Any] = []
    value = {"x": [inner]}
    inner.append({"back": value})
    assert invalid_message(value) == "value.x[0][0].back: reference cycle back to value"


def test_shared_reference_that_is_not_a_cycle_is_fine() -> None:
    shared = {"n": [1, 2]}
    value = {"a": shared, "b": shared, "c": [shared, shared["n"]]}
    assert canonical(value) == '{"a":{"n":[1,2]},"b":{"n":[1,2]},"c":[{"n":[1,2]},[1,2]]}'


def test_shared_invalid_value_is_reported_at_first_occurrence() -> None:
    shared = [(1,)]
    assert invalid_message({"a": shared, "b": shared}) == (
        "value.a[0]: tuple is not a durable value (use a list)"
    )


def test_shared_references_that_expand_too_far_are_refused() -> None:
    value: list[Any] = []
    for _ in range(40):
        value = [value, value]
    message = invalid_message(value)
    assert message.startswith("value")
    assert message.endswith(
        f"list is not a durable value: it holds more than {MAX_EXPANDED_VALUES} values "
        "once shared references are written out"
    )


# --- nesting depth --------------------------------------------------------------


def test_nesting_up_to_the_limit_is_fine() -> None:
    value = nested_lists(MAX_DEPTH)
    assert canonical(value) == "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert codec.decode("[" * MAX_DEPTH + "]" * MAX_DEPTH) == value


def test_nesting_beyond_the_limit_is_refused() -> None:
    message = invalid_message(nested_lists(MAX_DEPTH + 1))
    assert message == (
        "value" + "[0]" * MAX_DEPTH + f": list is not a durable value: "
        f"nested deeper than {MAX_DEPTH} levels"
    )


def test_very_deep_nesting_is_refused_without_recursion_error() -> None:
    value: dict[str, Any] = {}
    for _ in range(100_000):
        value = {"d": value}
    message = invalid_message(value)
    assert message.startswith("value" + ".d" * MAX_DEPTH + ": dict is not a durable value")
    assert message.endswith(f"nested deeper than {MAX_DEPTH} levels")


def test_shared_reference_is_rechecked_when_it_sits_deeper() -> None:
    shared = nested_lists(MAX_DEPTH - 5)
    fine = [shared, [[[[shared]]]]]
    assert codec.encode(fine).status == "encoded"
    too_deep = [shared, [[[[[shared]]]]]]
    assert invalid_message(too_deep).endswith(f"nested deeper than {MAX_DEPTH} levels")


# --- never raises ---------------------------------------------------------------


class Hostile:
    """Raises from every hook the codec might be tempted to call."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__")

    def __hash__(self) -> int:
        raise RuntimeError("__hash__")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__")

    def __bool__(self) -> bool:
        raise RuntimeError("__bool__")

    def __len__(self) -> int:
        raise RuntimeError("__len__")

    def __iter__(self) -> Any:
        raise RuntimeError("__iter__")


class HostileKey:
    """Hashable, but its ``repr`` raises."""

    def __repr__(self) -> str:
        raise RuntimeError("__repr__")


class WrongRepr:
    """Its ``repr`` is not a str."""

    def __repr__(self) -> Any:
        return 42


class HostileAttributes:
    """Raises on every attribute access."""

    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError(name)


class HostileMeta(type):
    """A metaclass whose ``__module__`` and type checks raise."""

    @property
    def __module__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("__module__")

    def __instancecheck__(cls, instance: object) -> bool:
        raise RuntimeError("__instancecheck__")

    def __subclasscheck__(cls, subclass: type) -> bool:
        raise RuntimeError("__subclasscheck__")


class HostileClass(metaclass=HostileMeta):
    pass


class OddModule:
    """A class whose ``__module__`` is not a str."""

    __module__ = 42  # type: ignore[assignment]


class LyingClass(int):
    """An int subclass that claims to be something else."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        raise RuntimeError("__class__")

    def __index__(self) -> int:
        raise RuntimeError("__index__")

    def __int__(self) -> int:
        raise RuntimeError("__int__")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(Hostile(), f"value: {__name__}.Hostile is not a durable value", id="Hostile"),
        pytest.param(
            [Hostile()], f"value[0]: {__name__}.Hostile is not a durable value", id="in-list"
        ),
        pytest.param(
            {HostileKey(): 1},
            f"value: dict key <{__name__}.HostileKey object> ({__name__}.HostileKey) "
            "is not a durable value: object keys must be strings",
            id="key-repr-raises",
        ),
        pytest.param(
            {WrongRepr(): 1},
            f"value: dict key <{__name__}.WrongRepr object> ({__name__}.WrongRepr) "
            "is not a durable value: object keys must be strings",
            id="key-repr-not-str",
        ),
        pytest.param(
            HostileAttributes(),
            f"value: {__name__}.HostileAttributes is not a durable value",
            id="getattribute-raises",
        ),
        pytest.param(
            HostileClass(),
            f"value: {__name__}.HostileClass is not a durable value",
            id="metaclass-raises",
        ),
        pytest.param(OddModule(), "value: OddModule is not a durable value", id="module-not-str"),
        pytest.param(
            LyingClass(3),
            f"value: {__name__}.LyingClass (a subclass of int) is not a durable value: "
            "only plain int is accepted",
            id="int-subclass-raises",
        ),
    ],
)
def test_hostile_values_are_refused_without_raising(value: object, expected: str) -> None:
    assert invalid_message(value) == expected


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(HostileAttributes(), id="getattribute-raises"),
        pytest.param(LyingClass(3), id="int-subclass-raises"),
        pytest.param(HostileClass(), id="metaclass-raises"),
        pytest.param(HostileClass, id="class-with-raising-metaclass"),
    ],
)
def test_hostile_keys_are_refused_without_raising(key: object) -> None:
    message = invalid_message({key: 1})
    assert message.startswith("value: dict key ")
    assert message.endswith(" is not a durable value: object keys must be strings")


def test_unexpected_exception_becomes_an_invalid_value(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(value: object) -> bytes:
        raise MemoryError

    # A value with a float goes through rfc8785; a plain one through the json encoder.
    monkeypatch.setattr(rfc8785, "dumps", explode)
    assert invalid_message({"a": 1.5}, path="params") == (
        "params: value is not a durable value: MemoryError raised while encoding it"
    )
    monkeypatch.setattr(codec_module, "_plain_json", explode)
    assert invalid_message({"a": 1}, path="params") == (
        "params: value is not a durable value: MemoryError raised while encoding it"
    )
    for value in ({"a": 1.5}, {"a": 1}):
        refused = codec.round_trip(value, path="params")
        assert isinstance(refused, InvalidValue)
        assert refused.message == (
            "params: value is not a durable value: MemoryError raised while encoding it"
        )


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": [True, None, 'x\u2028\x7f\x00\n"\\'], "é": {"\ue000": 0, "z": -3}},
        {"\U0001f600": 1, "\uffff": 2, "a": "\U0001f600"},  # UTF-16 order differs: rfc8785
        [{"k": "\x1f\t\b\f\r"}, [], {}, 2**53 - 1, -(2**53 - 1), ""],
        "plain \u0085 text",
    ],
)
def test_plain_values_encode_as_rfc8785_does(value: object) -> None:
    assert codec.encode_or_raise(value) == rfc8785.dumps(cast("Any", value)).decode()


def test_non_str_path_falls_back_to_value() -> None:
    assert invalid_message((1,), path=7) == "value: tuple is not a durable value (use a list)"  # type: ignore[arg-type]


# --- encode_or_raise and validate_object ---------------------------------------


def test_encode_or_raise_returns_the_canonical_string() -> None:
    assert codec.encode_or_raise({"b": [1.0], "a": None}) == '{"a":null,"b":[1]}'


def test_encode_or_raise_raises_with_the_message() -> None:
    with pytest.raises(DurableValueError) as caught:
        codec.encode_or_raise({"items": [1, 2, float("nan")]}, path="params")
    assert str(caught.value) == "params.items[2]: float nan is not a durable value"
    assert caught.value.message == str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_validate_object_accepts_a_plain_dict() -> None:
    result = codec.validate_object({"b": 2, "a": 1})
    assert result == EncodedValue('{"a":1,"b":2}')


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        pytest.param([1], "list", id="list"),
        pytest.param(None, "None", id="None"),
        pytest.param("x", "str", id="str"),
        pytest.param(3, "int", id="int"),
        pytest.param((1,), "tuple", id="tuple"),
        pytest.param(collections.OrderedDict(), "collections.OrderedDict", id="OrderedDict"),
        pytest.param(Hostile(), f"{__name__}.Hostile", id="Hostile"),
    ],
)
def test_validate_object_refuses_anything_but_a_plain_dict(value: object, kind: str) -> None:
    result = codec.validate_object(value)
    assert result == InvalidValue(
        f"params: {kind} is not a durable object: start parameters must be an object"
    )


def test_validate_object_reports_nested_problems_under_its_path() -> None:
    result = codec.validate_object({"when": datetime.date(2024, 1, 1)}, path="input")
    assert result == InvalidValue("input.when: datetime.date is not a durable value")


def test_a_fresh_codec_behaves_like_the_shared_one() -> None:
    assert DurableValueCodec().encode({"x": 1}) == durable_value_codec.encode({"x": 1})


# --- decode ---------------------------------------------------------------------


def test_decode_accepts_non_canonical_json() -> None:
    text = ' {\n  "b" : 1.50 ,\t"a" : [ true , null , "\\u00e9" , -0 , 1E2 ] }\n'
    value = codec.decode(text)
    assert value == {"b": 1.5, "a": [True, None, "é", 0, 100.0]}
    assert canonical(value) == '{"a":[true,null,"é",0,100],"b":1.5}'


def test_decode_turns_integers_beyond_the_safe_range_into_floats() -> None:
    assert codec.decode("9007199254740991") == MAX_SAFE_INTEGER
    assert type(codec.decode("9007199254740991")) is int
    big = codec.decode("100000000000000000000")
    assert type(big) is float
    assert big == 1e20
    assert canonical(big) == "100000000000000000000"
    assert codec.decode(canonical(1e20)) == 1e20


def test_decode_combines_an_escaped_surrogate_pair() -> None:
    assert codec.decode('"\\ud83d\\ude00"') == "\U0001f600"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", "not valid JSON: Expecting value", id="empty"),
        pytest.param("[1, 2", "not valid JSON: Expecting ',' delimiter", id="truncated"),
        pytest.param("{'a': 1}", "not valid JSON: Expecting property name", id="single-quotes"),
        pytest.param("[1,]", "not valid JSON", id="trailing-comma"),
        pytest.param("1 2", "not valid JSON: Extra data", id="extra-data"),
        pytest.param('"\x01"', "not valid JSON: Invalid control character", id="control-char"),
        pytest.param("NaN", "NaN is not a durable value", id="NaN"),
        pytest.param("[Infinity]", "Infinity is not a durable value", id="Infinity"),
        pytest.param('{"a": -Infinity}', "-Infinity is not a durable value", id="-Infinity"),
        pytest.param('{"a": 1, "a": 2}', 'duplicate object key "a"', id="duplicate-key"),
        pytest.param(
            '[{"x": {"k": 1, "k": 1}}]', 'duplicate object key "k"', id="nested-duplicate"
        ),
        pytest.param(
            '["\\ud800"]',
            "value[0]: str with a lone surrogate at index 0 is not a durable value",
            id="escaped-lone-surrogate",
        ),
        pytest.param(
            '{"\\udc00x": 1}',
            'value: dict key "\\udc00x" with a lone surrogate at index 0 is not a durable value',
            id="lone-surrogate-key",
        ),
        pytest.param(
            '"a\ud800"',
            "value: str with a lone surrogate at index 1 is not a durable value",
            id="raw-lone-surrogate",
        ),
        pytest.param("1e400", "number 1e400 is outside the range of a double", id="float-overflow"),
        pytest.param(
            "-1e400", "number -1e400 is outside the range of a double", id="negative-overflow"
        ),
        pytest.param("1" * 5000, "is outside the range of a double", id="huge-integer"),
        pytest.param(
            "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
            f"nested deeper than {MAX_DEPTH} levels",
            id="too-deep",
        ),
        pytest.param(
            "[" * 100_000 + "]" * 100_000,
            f"nested deeper than {MAX_DEPTH} levels",
            id="far-too-deep",
        ),
    ],
)
def test_decode_refuses(text: str, expected: str) -> None:
    with pytest.raises(DurableValueError) as caught:
        codec.decode(text)
    message = str(caught.value)
    assert message.startswith("cannot decode durable value: ")
    assert expected in message


def test_decode_refuses_bytes() -> None:
    with pytest.raises(DurableValueError, match="expected str, got bytes"):
        codec.decode(b"1")  # type: ignore[arg-type]


# --- properties -----------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)

durable_values: st.SearchStrategy[DurableValue] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


def reversed_keys(value: DurableValue) -> DurableValue:
    """Rebuild ``value`` with every dict's keys inserted in reverse order."""
    if isinstance(value, dict):
        return {key: reversed_keys(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [reversed_keys(item) for item in value]
    return value


@deterministic
@given(durable_values)
def test_property_decode_inverts_encode(value: DurableValue) -> None:
    assert codec.decode(canonical(value)) == value


@deterministic
@given(durable_values)
def test_property_key_order_does_not_change_the_canonical_string(value: DurableValue) -> None:
    assert canonical(reversed_keys(value)) == canonical(value)


@deterministic
@given(st.data())
def test_property_permuted_dicts_encode_identically(data: st.DataObject) -> None:
    first = data.draw(st.dictionaries(st.text(max_size=8), durable_values, max_size=8))
    order = data.draw(st.permutations(list(first)))
    second = {key: first[key] for key in order}
    assert first == second
    assert canonical(first) == canonical(second)


@deterministic
@given(durable_values)
def test_property_encode_inverts_decode_on_canonical_text(value: DurableValue) -> None:
    text = canonical(value)
    assert canonical(codec.decode(text)) == text


@deterministic
@given(durable_values, st.sampled_from([None, 0, 2]))
def test_property_non_canonical_json_decodes_to_the_same_canonical_text(
    value: DurableValue, indent: int | None
) -> None:
    loose = json.dumps(value, indent=indent, ensure_ascii=indent == 2)
    assert canonical(codec.decode(loose)) == canonical(value)


def shape(value: object) -> object:
    """``value`` with every dict as the list of its items in order: equality that sees key
    order, which workflow code iterating over a dict sees."""
    if isinstance(value, dict):
        return [(key, shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [shape(item) for item in value]
    return (type(value).__name__, value)


@deterministic
@given(durable_values)
def test_property_round_trip_is_encode_then_decode(value: DurableValue) -> None:
    # What a reader of the stored value sees, key order and types included, whether the
    # value is plain (copied without parsing) or not (decoded).
    result = codec.round_trip(value)
    assert not isinstance(result, InvalidValue)
    text, decoded = result
    assert text == canonical(value)
    assert shape(decoded) == shape(codec.decode(text))


@deterministic
@given(durable_values)
def test_property_round_trip_gives_new_containers(value: DurableValue) -> None:
    result = codec.round_trip([value])
    assert not isinstance(result, InvalidValue)
    copied = result[1]
    assert isinstance(copied, list)
    copied.append("changed")
    if isinstance(copied[0], dict | list) and isinstance(value, dict | list):
        assert copied[0] is not value


def make_cycle(value: object) -> list[object]:
    """Return a list that contains ``value`` and, nested inside, itself."""
    outer: list[object] = [value]
    outer.append({"again": [outer]})
    return outer


# Lone surrogates included, which st.characters() leaves out by default.
any_character = st.characters() | st.characters(categories=["Cs"])

hashable_junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(any_character),
    st.binary(max_size=4),
    st.complex_numbers(),
    st.decimals(allow_nan=False),
    st.fractions(),
    st.datetimes(),
    st.dates(),
    st.times(),
    st.timedeltas(),
    st.uuids(),
    st.frozensets(st.integers(), max_size=3),
    st.tuples(st.integers(), st.text()),
    st.sampled_from([Color.RED, Shade.DARK, Mood.HAPPY, Plain.ONE, ..., NotImplemented]),
    st.sampled_from([int, str, object, type, Thing, HostileClass, OddModule, len, a_function]),
    st.builds(HostileKey),
    st.builds(WrongRepr),
    st.builds(HostileClass),
    st.builds(OddModule),
    st.just(2**5000),
    st.integers(min_value=2**53 - 3, max_value=2**53 + 3),
)

junk_leaves = st.one_of(
    hashable_junk,
    # Hypothesis itself reads __class__ of dict keys, so these are values only.
    st.builds(Hostile),
    st.builds(HostileAttributes),
    st.builds(LyingClass, st.integers()),
    st.decimals(),
    st.sets(st.integers(), max_size=3),
    st.builds(bytearray, st.binary(max_size=4)),
    st.functions(),
    st.builds(collections.OrderedDict),
    st.builds(MyList),
)

junk: st.SearchStrategy[object] = st.recursive(
    junk_leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(hashable_junk, children, max_size=4),
        st.dictionaries(st.text(max_size=4), children, max_size=4),
        st.tuples(children),
        children.map(make_cycle),
    ),
    max_leaves=20,
)


@settings(deterministic, max_examples=300)
@given(junk)
def test_property_encode_never_raises(value: object) -> None:
    result = codec.encode(value, path="params")
    if isinstance(result, EncodedValue):
        assert canonical(codec.decode(result.canonical)) == result.canonical
    else:
        assert isinstance(result, InvalidValue)
        assert result.message.startswith("params")
        assert "is not a durable value" in result.message or "reference cycle" in result.message
        with pytest.raises(DurableValueError):
            codec.encode_or_raise(value)


@deterministic
@given(st.text(any_character, max_size=20))
def test_property_decode_refuses_or_returns_an_encodable_value(text: str) -> None:
    try:
        value = codec.decode(text)
    except DurableValueError:
        return
    assert codec.encode(value).status == "encoded"


@deterministic
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_property_every_finite_float_round_trips(number: float) -> None:
    decoded = codec.decode(canonical(number))
    assert decoded == number
    assert not (isinstance(decoded, float) and math.isnan(decoded))


@settings(deterministic, max_examples=300)
@given(junk)
def test_property_round_trip_refuses_what_encode_refuses(value: object) -> None:
    encoded = codec.encode(value, path="params")
    result = codec.round_trip(value, path="params")
    if isinstance(encoded, InvalidValue):
        assert result == encoded
    else:
        assert not isinstance(result, InvalidValue)
        assert result[0] == encoded.canonical
