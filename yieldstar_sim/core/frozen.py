"""Building frozen dataclasses on a hot path, at the cost of a plain class.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses), about 70 ns a field: a trace event (11 fields) costs ~1.1 us to
build where a plain slotted object costs ~0.15 us. A simulated run builds hundreds of
events, records, leases and choice points, and their construction was a fifth of a memory
run. ``maker(cls)`` returns a function that builds the same instance 5-7 times faster: it
fills a plain object with the same slots, then makes it an instance of ``cls``
(``__class__`` assignment, which Python allows between classes of the same slot layout).
The result is an ordinary ``cls``: frozen, equal, hashable and printed as one built by
``cls(...)``; a test compares the two for every class the package makes this way.

What it skips is ``__post_init__``, so a class that has one is refused (validation stays
where the class puts it) unless the caller says it makes the same checks (``checked``).

>>> from dataclasses import FrozenInstanceError, dataclass
>>> @dataclass(frozen=True, slots=True)
... class Pair:
...     left: int
...     right: str = "r"
>>> make = maker(Pair)
>>> make(1, "x") == Pair(1, "x"), make(2), type(make(2)) is Pair
(True, Pair(left=2, right='r'), True)
>>> try:
...     make(1).left = 3
... except FrozenInstanceError:
...     print("still frozen")
still frozen
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")


def maker(cls: type[T], *, checked: bool = False) -> Callable[..., T]:
    """A fast constructor for the frozen, slotted dataclass ``cls``: positional (or keyword)
    arguments in field order, defaults as the class declares them. Raises ``TypeError`` for a
    class it cannot build exactly as ``cls(...)`` would (not a frozen slotted dataclass, a
    ``__post_init__``, a default factory, a field left out of ``__init__``, or a base class
    that adds slots of its own).

    ``checked=True`` accepts a class with a ``__post_init__`` that only checks its fields:
    the caller promises to make those checks itself before each call.
    """
    params = cls.__dict__.get("__dataclass_params__")
    if not dataclasses.is_dataclass(cls) or params is None or not params.frozen:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    slots = cls.__dict__.get("__slots__")
    if slots is None:
        raise TypeError(f"{cls.__name__} has no __slots__ (use @dataclass(slots=True))")
    if hasattr(cls, "__post_init__") and not checked:
        raise TypeError(f"{cls.__name__} has a __post_init__, which a maker would skip")
    if any(getattr(base, "__slots__", ()) for base in cls.__mro__[1:-1]):
        raise TypeError(f"{cls.__name__} inherits slots; a maker cannot copy its layout")
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    if tuple(names) != tuple(slots):
        raise TypeError(f"{cls.__name__}'s slots are not its fields in order")
    defaults: list[Any] = []
    for f in fields:
        if not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} has no plain default a maker can give")
        if f.default is not dataclasses.MISSING:
            defaults.append(f.default)
        elif defaults:
            raise TypeError(f"{cls.__name__}.{f.name}: a field without a default follows one")
    # A plain class of the same layout, filled by ordinary (fast) slot stores. It has the
    # class's bases (slotless, as checked above): ``__class__`` assignment wants the same
    # bases, and a payload's are a Mapping's.
    twin = type(f"_Mutable{cls.__name__}", cls.__bases__, {"__slots__": tuple(slots)})
    stores = "".join(f"    o.{name} = {name}\n" for name in names)
    source = (
        f"def make({', '.join(names)}):\n"
        f"    o = twin()\n{stores}    o.__class__ = cls\n    return o\n"
    )
    namespace: dict[str, Any] = {"twin": twin, "cls": cls}
    exec(source, namespace)
    make: Callable[..., T] = namespace["make"]
    make.__defaults__ = tuple(defaults) or None
    make.__qualname__ = f"maker({cls.__name__})"
    make.__doc__ = f"Build a {cls.__name__} (fields in order), as {cls.__name__}(...) would."
    return make
