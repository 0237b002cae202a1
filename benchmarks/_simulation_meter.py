"""bench_simulation's instruments: timing wrappers that charge a run's time to categories
(kernel, execution, runtime, the rest itemised), and a per-run ``cProfile`` summed per file and
function.

The wrappers switch a stack of categories (``Meter``); they go on at class level
(``Instrumented``), so bound methods taken at construction, like the kernel's ``next_wake``, are
caught too; the time between two switches goes to the category on top. ``switch_cost`` is what
one wrapper adds. The profile charges C builtins to the files that called them, in proportion to
the time of each call edge.
"""

from __future__ import annotations

import cProfile
import functools
import inspect
import math
import pstats
import sysconfig
import time
import types
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from _harness import gc_paused, median

import yieldstar_sim as ys
from yieldstar_sim.core.codec import DurableValueCodec
from yieldstar_sim.runtime.duckdb_runtime import DuckDBRuntime
from yieldstar_sim.runtime.memory import MemoryRuntime
from yieldstar_sim.simulation.execution import Execution
from yieldstar_sim.simulation.faults import FaultPlan
from yieldstar_sim.simulation.finish import finish
from yieldstar_sim.simulation.kernel import Kernel
from yieldstar_sim.simulation.run import drive
from yieldstar_sim.simulation.trace import Trace

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

P = ParamSpec("P")
R = TypeVar("R")

PACKAGE = Path(ys.__file__).resolve().parent
KERNEL_FILE = PACKAGE / "simulation" / "kernel.py"
EXECUTION_FILE = PACKAGE / "simulation" / "execution.py"
RUNTIME_DIR = PACKAGE / "runtime"
STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()
KERNEL, EXECUTION, RUNTIME = "kernel", "execution", "runtime"
REST = {
    "actors": "the simulation's actors, the driver, step bodies, the world",
    "codec": "the durable-value codec, outside the runtime (driver, world)",
    "trace": "Trace.add",
    "fault plan": "FaultPlan.fault_at, where the default move finds the plan's fault",
    "setup": "Execution(...) construction, less runtime and kernel",
    "check": "finish(): invariants and collecting records, less runtime",
}
CODEC_METHODS = ("encode", "encode_or_raise", "decode", "decode_trusted", "validate_object")
#: The kernel's methods an Execution calls (``settle``, ``ready``, ``point``, ``take``...):
#: its own code, charged to it; what they resume is the actors'.
KERNEL_METHODS = ("__init__", "settle", "ready", "point", "take", "pending", "nudge", "wake",
                  "close")  # fmt: skip
#: The Execution's per-move work: the seed's move (the choice among the ready actors), the
#: plan's fault, checking and recording the move (its path); ``drive`` is its loop.
EXECUTION_METHODS = ("default_move", "take", "done", "close_actors")


class Meter:
    """A stack of categories; the time between two switches goes to the one on top (none
    while paused)."""

    def __init__(self) -> None:
        self.stack: list[str] = ["other"]
        self.spent: dict[str, float] = defaultdict(float)
        self.switches = 0
        self.paused = True
        self.mark = time.perf_counter()

    def push(self, category: str) -> None:
        if not self.paused:
            now = time.perf_counter()
            self.spent[self.stack[-1]] += now - self.mark
            self.mark = now
            self.switches += 1
        self.stack.append(category)

    def pop(self) -> None:
        if not self.paused:
            now = time.perf_counter()
            self.spent[self.stack[-1]] += now - self.mark
            self.mark = now
            self.switches += 1
        self.stack.pop()

    def start(self) -> None:
        """Count from now (at the start of a run)."""
        self.stack = ["other"]
        self.paused = False
        self.mark = time.perf_counter()

    def pause(self) -> None:
        """Stop counting (at the end of a run)."""
        self.paused = True


def metered(
    meter: Meter, category: str, function: Callable[P, R], *, unless_in: str | None = None
) -> Callable[P, R]:
    """``function``, its time charged to ``category`` (left to ``unless_in`` when called
    from there)."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if meter.stack[-1] == unless_in:
            return function(*args, **kwargs)
        meter.push(category)
        try:
            return function(*args, **kwargs)
        finally:
            meter.pop()

    return wrapper


class MeteredActor:
    """Wraps an actor generator: time inside its ``send`` and ``close`` is not the kernel's."""

    __slots__ = ("actor", "meter")

    def __init__(self, actor: Generator[Any, Any, None], meter: Meter) -> None:
        self.actor = actor
        self.meter = meter

    def send(self, value: Any) -> Any:
        self.meter.push("actors")
        try:
            return self.actor.send(value)
        finally:
            self.meter.pop()

    def close(self) -> None:
        self.meter.push("actors")
        try:
            self.actor.close()
        finally:
            self.meter.pop()


class Instrumented:
    """Class-level timing wrappers on the runtime, kernel, codec, trace and fault plan, for a
    ``with`` block (class level, so bound methods taken at construction are wrapped too)."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.saved: list[tuple[type, str, Any]] = []

    def wrap(self, owner: type, name: str, category: str, *, unless_in: str | None = None) -> None:
        """Wrap ``owner``'s method ``name``, its own or inherited (set on ``owner``, and taken
        off again on exit: the base class is left alone)."""
        original = inspect.getattr_static(owner, name)
        self.saved.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, metered(self.meter, category, original, unless_in=unless_in))

    def __enter__(self) -> Instrumented:
        meter = self.meter
        for runtime in (MemoryRuntime, DuckDBRuntime):
            # Inherited calls too: the DuckDB runtime's are its SQL base class's (SqlCalls).
            for name in dir(runtime):
                value = inspect.getattr_static(runtime, name)
                if isinstance(value, types.FunctionType) and (
                    name == "__init__" or not name.startswith("_")
                ):
                    self.wrap(runtime, name, RUNTIME)
        for name in KERNEL_METHODS:
            self.wrap(Kernel, name, KERNEL)
        for name in EXECUTION_METHODS:
            self.wrap(Execution, name, EXECUTION)
        for name in CODEC_METHODS:
            self.wrap(DurableValueCodec, name, "codec", unless_in=RUNTIME)
        self.wrap(Trace, "add", "trace")
        self.wrap(FaultPlan, "fault_at", "fault plan")
        spawn = Kernel.spawn

        def spawn_metered(
            kernel: Kernel,
            name: str,
            actor: Generator[Any, Any, None],
            *,
            at: float | None = None,
        ) -> None:
            meter.push(KERNEL)
            try:
                spawn(kernel, name, MeteredActor(actor, meter), at=at)  # type: ignore[arg-type]
            finally:
                meter.pop()

        self.saved.append((Kernel, "spawn", spawn))
        setattr(Kernel, "spawn", spawn_metered)  # noqa: B010 (a method, replaced for a while)
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in reversed(self.saved):
            if original is None:
                delattr(owner, name)  # it was inherited
            else:
                setattr(owner, name, original)
        self.saved.clear()


def switch_cost(pairs: int = 20_000) -> float:
    """Seconds one metered call adds (two switches and the wrapper), over a bare call."""

    def nothing() -> None:
        return None

    meter = Meter()
    meter.start()
    wrapped = metered(meter, "x", nothing)
    best = math.inf
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(pairs):
            nothing()
        bare = time.perf_counter() - began
        began = time.perf_counter()
        for _ in range(pairs):
            wrapped()
        best = min(best, (time.perf_counter() - began - bare) / pairs)
    return best


# --------------------------------------------------------------------------- profile


Func = tuple[str, int, str]


@dataclass
class Profile:
    """``tottime`` per file and per function, run by run (each run profiled on its own, so a
    preemption distorts one run, not the medians); builtins charged to their callers' files."""

    files: list[dict[str, float]] = field(default_factory=list)
    functions: list[dict[str, float]] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return len(self.files)

    @staticmethod
    def part(run: dict[str, float], name: str) -> float:
        if name == "all":
            return sum(run.values())
        if name == "other":
            return sum(run.values()) - sum(
                run.get(own, 0.0) for own in (KERNEL, EXECUTION, RUNTIME)
            )
        return run.get(name, 0.0)

    def seconds(self, name: str, *, function: bool = False) -> float:
        """Median tottime per run of a file (or "all", "other"), or of a function."""
        if function:
            return median(run.get(name, 0.0) for run in self.functions)
        return median(self.part(run, name) for run in self.files)

    def share(self, name: str, of: str = "all", *, function: bool = False) -> float:
        """Median per-run share of a file's (or function's) tottime in ``of``'s."""
        runs = zip(self.functions if function else self.files, self.files, strict=True)
        return median(
            (mine.get(name, 0.0) if function else self.part(mine, name)) / self.part(run, of)
            for mine, run in runs
        )


def bucket(filename: str) -> str:
    """``kernel``, ``execution``, ``runtime`` or a short file name for a profiled source
    file."""
    path = Path(filename)
    if path == KERNEL_FILE:
        return KERNEL
    if path == EXECUTION_FILE:
        return EXECUTION
    if RUNTIME_DIR in path.parents:
        return "runtime"
    if PACKAGE in path.parents:
        return str(path.relative_to(PACKAGE.parent))
    if "site-packages" in path.parts:
        index = path.parts.index("site-packages")
        return f"{path.parts[index + 1]} (site-packages)"
    if STDLIB in path.parents:
        return f"{path.relative_to(STDLIB).as_posix()} (stdlib)"
    return filename


def function_name(func: Func) -> str:
    filename, line, name = func
    if filename == "~":
        return name
    return f"{bucket(filename)}:{line} {name}"


def measure_profile(profile: Profile, scenario: ys.Scenario, seeds: range) -> None:
    for seed in seeds:
        profiler = cProfile.Profile()
        with gc_paused():
            profiler.enable()
            execution = Execution(scenario, seed=seed, runtime="memory")
            drive(execution, Execution.default_move)
            execution.close_actors()
            finish(execution).runtime.close()
            profiler.disable()
        by_file: dict[str, float] = defaultdict(float)
        by_function: dict[str, float] = defaultdict(float)
        stats: dict[Func, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        for func, (_, _, tottime, _, callers) in stats.items():
            filename = func[0]
            if filename != "~":
                by_file[bucket(filename)] += tottime
                by_function[function_name(func)] += tottime
                continue
            # A C builtin: charge it to its callers' files, in proportion to each edge's time.
            by_function[func[2]] += tottime
            edges = {caller: edge[2] for caller, edge in callers.items()}
            weight = sum(edges.values())
            if weight <= 0:
                by_file["builtins (no caller)"] += tottime
                continue
            for caller, edge_time in edges.items():
                owner = bucket(caller[0]) if caller[0] != "~" else "builtins (no caller)"
                by_file[owner] += tottime * edge_time / weight
        profile.files.append(dict(by_file))
        profile.functions.append(dict(by_function))
