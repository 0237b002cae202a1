"""What a trace event's payload is: the ``Payload`` base (a frozen dataclass that reads as a
mapping over its JSON form), its JSON form, and the registry that reads one back by its event's
kind and op (``payload``, ``payload_from_json``). The kinds and the payload of each are
``trace_payloads``'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

if TYPE_CHECKING:
    from enum import StrEnum

    from yieldstar_sim.core.ops import Op


_OMIT = "omitted while default"

_PAYLOADS: dict[tuple[StrEnum, Op | None], type[Payload]] = {}

P = TypeVar("P", bound="type[Payload]")


def payload(kind: StrEnum, *, op: Op | None = None) -> Callable[[P], P]:
    """Register a payload class as the data of ``kind`` events (of the runtime call ``op``,
    for ``TraceKind.CALL``): ``Trace.from_jsonl`` reads such events' data back into it."""

    def register(cls: P) -> P:
        if (kind, op) in _PAYLOADS:
            raise ValueError(f"{kind} events ({op or 'any op'}) have a payload already")
        _PAYLOADS[(kind, op)] = cls
        cls.kinds = (*cls.kinds, (kind, op))
        return cls

    return register


def omittable(default: Any = None) -> Any:
    """A field the JSON form leaves out while it holds ``default``, as the dict form did."""
    return field(default=default, metadata={_OMIT: True})


@cache
def _plan(kind: type) -> tuple[tuple[str, bool, Any], ...]:
    """``kind``'s fields as ``to_json`` walks them: (name, omitted while default, default).
    Made once a class: the exhaustive search writes every event's JSON into its state key, and
    ``dataclasses.fields`` built its tuple anew at each call, half of ``to_json``'s time."""
    return tuple((each.name, bool(each.metadata.get(_OMIT)), each.default) for each in fields(kind))


class Payload(Mapping[str, Any]):
    """The data of one event. Subclasses are frozen dataclasses; read them by attribute.

    A payload is also a read-only mapping over its JSON form (``event.data["accepted"]``,
    ``"refused" in event.data``), so that code written when ``data`` was a dict still reads.
    """

    __slots__ = ()

    kinds: ClassVar[tuple[tuple[StrEnum, Op | None], ...]] = ()
    """The (kind, op) pairs this payload is registered for (``op`` None: any op)."""

    def to_json(self) -> dict[str, Any]:
        """The payload as plain data: every field, less those left at an omittable default."""
        out: dict[str, Any] = {}
        for name, omit, default in _plan(type(self)):
            value = getattr(self, name)
            if omit and value == default:
                continue
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Payload:
        """The payload from its JSON form; a ``ValueError`` names a key it does not know or
        one it needs and lacks."""
        known = {each.name: each for each in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{cls.__name__} has no field {', '.join(map(repr, unknown))}")
        missing = [
            name
            for name, each in known.items()
            if name not in data and each.default is MISSING and each.default_factory is MISSING
        ]
        if missing:
            raise ValueError(f"{cls.__name__} needs {', '.join(map(repr, missing))}")
        return cast("Any", cls)(**data)  # type: ignore[no-any-return]

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())


@dataclass(frozen=True, slots=True)
class NoData(Payload):
    """The data of an event that carries none (its JSON form is ``{}``)."""


NO_DATA = NoData()


class TuplePayload(Payload):
    """A payload with tuple fields (``tuple_fields``), which a reader may give as lists (JSON's,
    or a caller's): kept as tuples, so that the payload stays hashable and equal to one built
    from tuples."""

    __slots__ = ()

    tuple_fields: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for name in self.tuple_fields:
            object.__setattr__(self, name, tuple(getattr(self, name)))


def payload_from_json(kind: StrEnum, op: Op | None, data: Mapping[str, Any]) -> Payload:
    """The typed payload of a ``kind`` event (of call ``op``) from its JSON form."""
    if not data:
        return NO_DATA
    cls = _PAYLOADS.get((kind, op)) or _PAYLOADS.get((kind, None))
    if cls is None:
        what = f"{kind} events of op {op!r}" if op is not None else f"{kind} events"
        raise ValueError(f"{what} carry no data, yet this one has {sorted(data)}")
    return cls.from_json(data)
