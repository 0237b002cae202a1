"""No view crashes on a trace the simulator can produce.

Hypothesis draws bundled scenarios, seeds and faults (any kind at any choice point), runs them,
and renders every view of the run: the picture of the graph beside the timeline, each part
alone and as of a middle event, the exports and the stepper's words and records.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.simulation.faults import FAULT_KINDS
from yieldstar_sim.simulation.scenario_files import bundled_scenarios
from yieldstar_sim.views import (
    build_timeline,
    draw_execution_graph,
    draw_run,
    draw_timeline,
    export,
    figure_bytes,
    graph_from_trace,
)
from yieldstar_sim.views.records import RecordBook
from yieldstar_sim.views.words import narrate

mpl.use("Agg")

SCENARIOS = {name: ys.load_scenario(name) for name in bundled_scenarios()}
EXTRA = Path(__file__).parents[1] / "scenarios" / "verdicts"
for extra in ("elapse_effect", "duplicate_trigger", "loop_steps", "retried_effect"):
    SCENARIOS[extra] = ys.load_scenario(EXTRA / f"{extra}.py")


@st.composite
def runs(draw: st.DrawFn) -> SimulationRun:
    scenario = SCENARIOS[draw(st.sampled_from(sorted(SCENARIOS)))]
    seed = draw(st.integers(0, 2**16))
    faults = [
        ys.Fault(
            kind,
            at=draw(st.integers(0, 40)),
            seconds=draw(st.sampled_from([5.0, 40.0])) if kind == "freeze" else None,
        )
        for kind in draw(st.lists(st.sampled_from(FAULT_KINDS), max_size=2))
    ]
    return ys.simulate(
        scenario, seed=seed, runtime="memory", faults=faults, check_faults=False, timeout=None
    )


@settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(run=runs())
def test_every_view_renders_every_run(run: SimulationRun, tmp_path_factory: object) -> None:
    times = [event.t for event in run.trace]
    assert times == sorted(times), "the trace is in time order"
    middle = len(run.trace) // 2
    assert figure_bytes(draw_run(run), "svg").startswith(b"<?xml")
    assert figure_bytes(draw_run(run, upto=middle), "svg").startswith(b"<?xml")
    assert figure_bytes(draw_execution_graph(graph_from_trace(run.trace, middle)), "svg")
    assert figure_bytes(draw_timeline(build_timeline(run.trace, run.scenario.worker_names)), "svg")
    folder = Path(str(tmp_path_factory.mktemp("views")))  # type: ignore[attr-defined]
    written = export(run, folder, ["graphml", "json", "dot", "mermaid", "html"], stem="run")
    assert all(path.stat().st_size > 0 for path in written.values())
    assert len(narrate(run.trace)) == len(run.trace)
    book = RecordBook.of_run(run)
    book.at(middle)
    book.at(len(run.trace) - 1)
