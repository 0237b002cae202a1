"""Which runtime a run uses: ``"memory"``, ``"duckdb"``, ``"postgres"``, or your own.

``"postgres"`` opens a ``PostgresRuntime`` (the ``postgres`` extra) on the server the environment
variable ``YIELDSTAR_PG_DSN`` names, in a schema of its own that closing the runtime drops.

Your own runtime is a *factory*: a callable that takes the simulator's virtual clock as
``clock=`` (as the bundled adapters do) and returns an object satisfying the runtime Protocols
(``ExecutionClient`` and ``WorkflowStartClient``). It may be given as the callable itself or,
so that a command line, a process pool and a replay artifact can name it, as a string
``"package.module:factory"``.

>>> label, _ = resolve_runtime("memory")
>>> label
'memory'
>>> resolve_runtime("yieldstar_sim.runtime.memory:MemoryRuntime")[0]
'yieldstar_sim.runtime.memory:MemoryRuntime'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.runtime.protocol import Runtime

# Its home is beside the Protocols, so that the adapters raise it without importing this module
# (which imports them); its callers keep importing it from here.
from yieldstar_sim.runtime.protocol import RuntimeChoiceError as RuntimeChoiceError  # noqa: PLC0414

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

RuntimeFactory: TypeAlias = Callable[..., Runtime]
RuntimeChoice: TypeAlias = "str | RuntimeFactory"

BUNDLED = ("memory", "duckdb", "postgres")

#: What the simulator and the engine call on a runtime: a factory's object must have them all.
REQUIRED = (
    "clock", "trigger", "start", "execution", "executions", "steps", "start_requests", "due",
    "next_wake_at", "claim", "renew", "put_step", "record_wake", "acknowledge", "release",
    "wait_for", "start_child", "cancel", "prune", "close",
)  # fmt: skip


def resolve_runtime(choice: RuntimeChoice) -> tuple[str, RuntimeFactory | None]:
    """``(label, factory)`` for a choice: the bundled adapters have no factory (None); a
    ``"module:attr"`` string is imported; a callable is labelled ``module:qualname`` when that
    names it back, else by its name."""
    if isinstance(choice, str):
        if choice in BUNDLED:
            return choice, None
        module_name, colon, attribute = choice.partition(":")
        if not colon or not module_name or not attribute:
            raise RuntimeChoiceError(
                "runtime must be 'memory', 'duckdb', 'postgres' or 'package.module:factory', "
                f"not {choice!r}"
            )
        try:
            target: Any = importlib.import_module(module_name)
        except ImportError as error:
            raise RuntimeChoiceError(
                f"runtime {choice!r}: cannot import {module_name!r} ({error})"
            ) from None
        for part in attribute.split("."):
            target = getattr(target, part, None)
            if target is None:
                raise RuntimeChoiceError(f"runtime {choice!r}: {module_name} has no {attribute}")
        if not callable(target):
            raise RuntimeChoiceError(f"runtime {choice!r} is not callable")
        return choice, target
    if callable(choice):
        return runtime_label(choice), choice
    raise RuntimeChoiceError(
        "runtime must be 'memory', 'duckdb', 'postgres', 'package.module:factory' or a "
        f"callable, not {choice!r}"
    )


def runtime_label(factory: RuntimeFactory) -> str:
    """``module:qualname`` when importing that gives the factory back, else its name."""
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if module and qualname and "<" not in qualname:
        try:
            named: Any = importlib.import_module(module)
            for part in qualname.split("."):
                named = getattr(named, part)
        except (ImportError, AttributeError):
            named = None
        if named is factory:
            return f"{module}:{qualname}"
    return str(getattr(factory, "__name__", None) or type(factory).__name__)


def open_runtime(
    choice: RuntimeChoice,
    clock: Any,
    db: str | Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> Runtime:
    """A fresh runtime for ``choice`` on ``clock`` (``db``: DuckDB's file; ``options``: keyword
    arguments, a scenario's ``runtime_options``). A factory's object is checked for every call
    the simulator makes, and refused with the missing ones named."""
    options = dict(options or {})
    label, factory = resolve_runtime(choice)
    if label == "memory":
        if db is not None:
            raise RuntimeChoiceError("a database file needs runtime='duckdb'")
        return MemoryRuntime(clock=clock, **options)
    if label == "duckdb":
        return DuckDBRuntime(":memory:" if db is None else db, clock=clock, **options)
    if label == "postgres":
        return _open_postgres(clock, db, options)
    assert factory is not None
    if db is not None:
        raise RuntimeChoiceError(f"a database file needs runtime='duckdb', not {label!r}")
    try:
        runtime = factory(clock=clock, **options)
    except TypeError as error:
        # The scenario's runtime_options are passed on: say so, a factory may not know them.
        given = "clock=" + "".join(f", {name}=" for name in options)
        whose = " (the scenario's runtime_options)" if options else ""
        raise RuntimeChoiceError(
            f"the runtime factory {label} could not be called with {given}{whose}: {error}"
        ) from None
    missing = [name for name in REQUIRED if not hasattr(runtime, name)]
    if missing:
        raise RuntimeChoiceError(
            f"the runtime factory {label} made a {type(runtime).__name__}, which lacks "
            f"{', '.join(missing)}: a runtime satisfies ExecutionClient and WorkflowStartClient"
        )
    return runtime


def _open_postgres(clock: Any, db: str | Path | None, options: dict[str, Any]) -> Runtime:
    """A ``PostgresRuntime`` from ``YIELDSTAR_PG_DSN``; psycopg is an optional dependency."""
    if db is not None:
        raise RuntimeChoiceError("a database file needs runtime='duckdb', not 'postgres'")
    try:
        from yieldstar_sim.runtime.postgres import from_env
    except ImportError as error:
        raise RuntimeChoiceError(
            f"runtime 'postgres' needs psycopg: pip install 'yieldstar-sim[postgres]' ({error})"
        ) from None
    return from_env(clock=clock, **options)
