"""Every bundled scenario copied to 1,000 triggers, for ``bench_views.py`` (issue 53, item 5).

A bundled scenario tells its story with one or two triggers. ``copied(scenario, triggers)``
repeats its triggers until there are ``triggers`` of them: the first copy keeps its IDs and
parameters, so the story's fault plan, cancels and prunes still strike it; each other copy
renames its execution ID's last part and every parameter that repeats it (``order-42`` with
``{"order": 42}`` becomes ``order-1042`` with ``{"order": 1042}``, ``onboard-ada`` with
``{"user": "ada"}`` becomes ``onboard-ada1`` with ``{"user": "ada1"}``), so that per-order
invariants and the business IDs a workflow derives from its parameters stay apart. A copy
that is ``violated`` is broken by its story (the first copy's fault or cancel, or the bug
itself in every copy); ``crashed`` adds a crash of the first copy's worker at its first
runtime call after the claim, as the issue's check asks: the crash that breaks one.

Per scenario and variant, with ``time.perf_counter``: the plain run (``ys.simulate``), then
the run's PNG as ``yieldstar-sim run`` draws it (``draw_run`` saved as PNG): seconds, pixels,
and whether each execution a violation names is drawn on its own in red (or, struck alike
by the hundred, in a red family) with its sentence under the graph; for the story variant,
the review page's bytes per trace event. Targets: every PNG at most 4,000 px a side, every
review page at most 1,000 bytes per event, drawing within 3x the plain run (the median of the
scenarios' ratios; the worst is printed).
"""

from __future__ import annotations

import io
import re
import statistics
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from _harness import progress, show

import yieldstar_sim as ys
from yieldstar_sim.simulation.scenario_files import bundled_scenarios

if TYPE_CHECKING:
    from collections.abc import Sequence

    from yieldstar_sim.simulation.result import SimulationRun

#: Triggers each copied scenario has (the smoke run: ``SMOKE_TRIGGERS``).
TRIGGERS = 1_000
QUICK_TRIGGERS = 200
SMOKE_TRIGGERS = 20
#: The issue's bounds.
MAX_SIDE = 4_000
MAX_RATIO = 3.0
BYTES_PER_EVENT = 1_000

_TAIL = re.compile(r"^(?P<head>.*?)(?P<tail>[A-Za-z0-9]+)$")


def _renamed(token: str, copy: int) -> str:
    """The last part of an ID in copy ``copy``: a number moves by 1,000 per copy, a word gets
    the copy's number."""
    return str(int(token) + 1_000 * copy) if token.isdigit() else f"{token}{copy}"


def _copy_params(params: Any, execution_id: str, renamed: str, token: str, new: str) -> Any:
    """``params`` with every value that repeats the execution ID, or its last part, renamed."""
    if isinstance(params, dict):
        return {k: _copy_params(v, execution_id, renamed, token, new) for k, v in params.items()}
    if isinstance(params, list):
        return [_copy_params(v, execution_id, renamed, token, new) for v in params]
    if params == execution_id:
        return renamed
    if isinstance(params, str) and params == token:
        return new
    if isinstance(params, int) and not isinstance(params, bool) and str(params) == token:
        return int(new)
    return params


def _copy_trigger(trigger: ys.Trigger, copy: int) -> ys.Trigger:
    if copy == 0 or trigger.execution_id is None:
        return trigger
    found = _TAIL.match(trigger.execution_id)
    if found is None:
        return replace(trigger, execution_id=f"{trigger.execution_id}~{copy}")
    token = found["tail"]
    new = _renamed(token, copy)
    renamed = found["head"] + new
    params = _copy_params(trigger.params, trigger.execution_id, renamed, token, new)
    return replace(trigger, execution_id=renamed, params=params)


def first_execution(scenario: ys.Scenario) -> str:
    """The first copy's first execution ID (every bundled trigger names one)."""
    return next(t.execution_id for t in scenario.triggers if t.execution_id is not None)


def copied(
    scenario: ys.Scenario, triggers: int = TRIGGERS, *, crashed: bool = False
) -> ys.Scenario:
    """``scenario`` with its triggers repeated to ``triggers`` (see the module's words); with
    ``crashed``, its first copy's worker also crashes at the first put_step of its first
    execution."""
    copies = -(-triggers // len(scenario.triggers))
    made = [_copy_trigger(t, copy) for copy in range(copies) for t in scenario.triggers]
    faults = list(scenario.faults)
    if crashed:
        faults.append(ys.Fault("crash", op="put_step", execution_id=first_execution(scenario)))
    return replace(
        scenario,
        name=f"{scenario.name}-x{triggers}",
        triggers=made[:triggers],
        faults=faults,
        max_points=None,
        # The copies' virtual time adds up on the same workers: a story of 90 s copied a
        # thousand times runs for hours, which its own bound of an hour would cut.
        max_time=scenario.max_time * copies,
    )


@dataclass
class CopyFigures:
    """One copied scenario's run and picture."""

    scenario: str
    variant: str
    verdict: str
    executions: int
    events: int
    run_seconds: float
    png_seconds: float
    pixels: tuple[int, int]
    named: int
    """Executions a violation names."""
    alone: bool
    """Each of them drawn on its own in red, or in a red family, with its sentence."""
    page_bytes: int = 0
    """The review page's size (the story variant only; 0: not written)."""

    @property
    def ratio(self) -> float:
        """Drawing over the plain run."""
        return self.png_seconds / max(self.run_seconds, 1e-9)


def _drawn_alone_in_red(run: SimulationRun, figure: Any) -> tuple[int, bool]:
    """How many executions the violations name, and whether each is drawn on its own with a
    red outline (or in a red family) and every violation's sentence is under the graph."""
    from yieldstar_sim.views.evidence import mark_violations
    from yieldstar_sim.views.figures import CAPTIONED_VIOLATIONS
    from yieldstar_sim.views.graph import VIOLATION_OUTLINE, graph_from_trace

    graph = graph_from_trace(run.trace)
    mark_violations(graph, run.violations)
    named = [str(node) for node, data in graph.nodes(data=True) if data.get("violation")]
    if not named:
        return 0, True
    axes = figure.axes[0]
    boxes: dict[str, Any] = {}
    for text in axes.texts:
        first = text.get_text().split("\n", 1)[0]
        boxes.setdefault(first, text)
    caption = " ".join(" ".join(t.get_text() for t in axes.texts).split())
    said = all(
        f"{number}. {violation.invariant}" in caption
        for number, violation in enumerate(run.violations[:CAPTIONED_VIOLATIONS], start=1)
    )
    red = 0
    for name in named:
        box = boxes.get(name)
        in_family = any(
            text.get_text().split("\n", 1)[0].split(" ", 2)[1:2] == ["\u00d7"]
            and "violation" in text.get_text()
            for text in axes.texts
        )
        patch = box.get_bbox_patch() if box is not None else None
        if (patch is not None and patch.get_linewidth() == VIOLATION_OUTLINE) or in_family:
            red += 1
    return len(named), said and red == len(named)


def measure_copy(name: str, triggers: int, *, crashed: bool) -> CopyFigures:
    """Run one bundled scenario copied to ``triggers`` triggers, then draw its PNG."""
    from PIL import Image

    from yieldstar_sim.views.figures import draw_run, figure_bytes
    from yieldstar_sim.views.review import review_page

    scenario = copied(ys.load_scenario(name), triggers, crashed=crashed)
    started = time.perf_counter()
    run = ys.simulate(scenario, seed=0, runtime="memory", timeout=None)
    run_seconds = time.perf_counter() - started
    started = time.perf_counter()
    figure = draw_run(run)
    png = figure_bytes(figure, "png")
    png_seconds = time.perf_counter() - started
    with Image.open(io.BytesIO(png)) as image:
        pixels = image.size
    named, alone = _drawn_alone_in_red(run, figure)
    page = 0 if crashed else len(review_page(run).encode())
    run.runtime.close()
    return CopyFigures(name, "crash" if crashed else "story", run.verdict,
                       len(run.executions), len(run.trace), run_seconds, png_seconds, pixels,
                       named, alone, page)  # fmt: skip


def copies_section(
    *, smoke: bool, quick: bool, names: Sequence[str] | None = None
) -> list[tuple[bool, str]]:
    """Every bundled scenario copied to 1,000 triggers (200 with ``quick``), as told and with a
    crash on its first copy: print a row each, return the target lines."""
    triggers = SMOKE_TRIGGERS if smoke else QUICK_TRIGGERS if quick else TRIGGERS
    chosen = list(names or bundled_scenarios())
    rows = []
    for name in chosen:
        for crashed in (False, True):
            progress(f"{name} x{triggers}{' with a crash' if crashed else ''}")
            rows.append(measure_copy(name, triggers, crashed=crashed))
    print(
        f"\nEvery bundled scenario copied to {triggers:,} triggers (memory runtime, seed 0): "
        "as told, and with\na crash of its first copy; the run's PNG as `yieldstar-sim run` "
        "draws it"
    )
    table = [["scenario", "variant", "verdict", "executions", "events", "run s", "PNG s",
              "PNG / run", "PNG px", "page B/event", "named", "alone in red"]]  # fmt: skip
    table += [
        [row.scenario, row.variant, row.verdict, f"{row.executions:,}", f"{row.events:,}",
         f"{row.run_seconds:.2f}", f"{row.png_seconds:.2f}", f"{row.ratio:.1f}x",
         f"{row.pixels[0]:,}x{row.pixels[1]:,}",
         f"{row.page_bytes / row.events:,.0f}" if row.page_bytes else "-", str(row.named),
         ("yes" if row.alone else "NO") if row.named else "-"]
        for row in rows
    ]  # fmt: skip
    show(table, [False, False, False, *[True] * 8, False], "  ")
    paged = [row for row in rows if row.page_bytes]
    heaviest = max(paged, key=lambda row: row.page_bytes / row.events)
    widest = max(rows, key=lambda row: max(row.pixels))
    ratio = statistics.median(row.ratio for row in rows)
    worst = max(rows, key=lambda row: row.ratio)
    broken = [row for row in rows if row.named and not row.alone]
    return [
        (max(widest.pixels) <= MAX_SIDE,
         f"every copied scenario's PNG at most {MAX_SIDE:,} px a side: widest "
         f"{max(widest.pixels):,} ({widest.scenario}, {widest.variant})"),
        (heaviest.page_bytes / heaviest.events <= BYTES_PER_EVENT,
         f"every copied scenario's review page at most {BYTES_PER_EVENT:,} bytes per trace "
         f"event: worst {heaviest.page_bytes / heaviest.events:,.0f} ({heaviest.scenario})"),
        (not broken,
         "every execution a violation names drawn alone in red (or in a red family) with its "
         f"sentence: {'all' if not broken else ', '.join(r.scenario for r in broken)}"),
        (ratio <= MAX_RATIO,
         f"drawing within {MAX_RATIO:g}x the plain run: median {ratio:.1f}x over the "
         f"scenarios (worst {worst.ratio:.1f}x, {worst.scenario} {worst.variant})"),
    ]  # fmt: skip
