"""A big state space drawn bounded, for ``bench_views.py`` (issue 33, item 4): the picture of
a 20,000-state exhaustive search in seconds.

Two spaces:

* **layered**: a made-up space of 20,000 states in 24 depths, each state reached from two of
  the depth before, twelve of the deepest violating (the tests' shape; 2,000 states with
  ``--smoke``);
* **booking race, 4 bookings** (full run only): the states a real exhaustive search reaches,
  ``ys.explore(booking-race with 4 bookings, strategy="exhaustive", max_faults=0)``, about
  20,600 states and 45,000 steps; the search itself takes about a minute and is not measured.

Per space, medians of the repetitions with the garbage collector on: ``state_graph(space)``
(the networkx graph of every state), ``draw_state_graph(graph)`` (bounded: the paths to the
violations and one summary node per depth for the rest), the PNG (``savefig``, 100 dpi), and
the bounded DOT export; the states the picture draws and its pixels. Target (reported, never
asserted): build + draw + PNG under ``MAX_SECONDS`` for a 20,000-state space, at most
``DRAWN_AT_MOST`` states and ``SUMMARY_BANDS`` summaries drawn.
"""

from __future__ import annotations

import dataclasses
import gc
import io
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _harness import median, progress, show

import yieldstar_sim as ys
from yieldstar_sim.simulation.explorer.statespace import StateSpace
from yieldstar_sim.views.statespace import draw_state_graph, export_state_graph, state_graph
from yieldstar_sim.views.statespace_bounds import DRAWN_AT_MOST, SUMMARY_BANDS, bounded_state_graph

#: Issue 33: "drawn in seconds".
MAX_SECONDS = 5.0
STATES = 20_000
SMOKE_STATES = 2_000


def layered_space(states: int, *, depth: int = 24, violations: int = 12) -> StateSpace:
    """``states`` states in ``depth`` layers, each reached from two states of the layer before
    (a tenth of the steps inject a fault); ``violations`` of the deepest states violate."""
    chooser = random.Random(7)
    space = StateSpace()
    space.add_state("s0", depth=0, label="start", plan=0)
    layers, made = [["s0"]], 1
    for level in range(1, depth + 1):
        count = (states - 1) // depth if level < depth else states - made
        layer = []
        for _ in range(count):
            key = f"s{made}"
            made += 1
            space.add_state(key, depth=level, label=f"point {level}", plan=made,
                            terminal=level == depth)  # fmt: skip
            for parent in chooser.sample(layers[-1], min(2, len(layers[-1]))):
                fault = "crash w1" if chooser.random() < 0.1 else None
                space.add_edge(parent, key, choice="w1", fault=fault, plan=made)
            layer.append(key)
        layers.append(layer)
    for key in chooser.sample(layers[-1], violations):
        space.mark_violation(key, "at most one admitted execution per step")
    return space


def booking_race_space(bookings: int = 4) -> StateSpace:
    """The state space of an exhaustive search of the booking race with ``bookings`` bookings
    (and as many workers) for one seat, no faults."""
    race = ys.load_scenario("booking-race")
    triggers = [
        ys.Trigger("book-seat", {"booking": f"booking-{n}"}, execution_id=f"booking-{n}")
        for n in range(1, bookings + 1)
    ]
    scenario = dataclasses.replace(
        race, name=f"booking-race-{bookings}", triggers=triggers, workers=bookings
    )
    report = ys.explore(
        scenario, strategy="exhaustive", max_faults=0, stop_at_first=False, confirm=None
    )
    assert report.state_space is not None
    return report.state_space


@dataclass
class SpaceFigures:
    """One space's figures: its size, seconds per part, what the picture draws."""

    name: str
    states: int = 0
    steps: int = 0
    seconds: dict[str, list[float]] = field(default_factory=dict)
    drawn: int = 0
    summaries: int = 0
    pixels: tuple[int, int] = (0, 0)


PARTS = ("graph", "draw", "png", "dot")


def measure_space(name: str, space: StateSpace, reps: int) -> SpaceFigures:
    """``reps`` repetitions of each part, each after a full collection."""
    figures = SpaceFigures(name)
    with tempfile.TemporaryDirectory() as folder:
        for rep in range(reps):
            progress(f"state space {name}: repetition {rep + 1}/{reps}")
            times = []
            gc.collect()
            times.append(time.perf_counter())
            graph = state_graph(space)
            times.append(time.perf_counter())
            figure = draw_state_graph(graph)
            times.append(time.perf_counter())
            figure.savefig(io.BytesIO(), format="png", dpi=100)
            times.append(time.perf_counter())
            export_state_graph(space, Path(folder), ["dot"])
            times.append(time.perf_counter())
            for part, began, ended in zip(PARTS, times, times[1:], strict=False):
                figures.seconds.setdefault(part, []).append(ended - began)
        figures.states, figures.steps = graph.number_of_nodes(), graph.number_of_edges()
        bounded = bounded_state_graph(graph)
        figures.summaries = sum(1 for _, d in bounded.nodes(data=True) if d.get("summary"))
        figures.drawn = bounded.number_of_nodes() - figures.summaries
        width, height = figure.get_size_inches() * 100
        figures.pixels = (round(width), round(height))
    return figures


def states_section(*, smoke: bool, quick: bool) -> list[tuple[bool, str]]:
    """Measure and print the big state spaces; returns the target lines."""
    reps = 1 if smoke else 3 if quick else 5
    spaces = [("layered", layered_space(SMOKE_STATES if smoke else STATES))]
    if not (smoke or quick):
        progress("state space booking-race-4: the exhaustive search (not measured)")
        spaces.append(("booking race, 4 bookings", booking_race_space()))
    rows = [measure_space(name, space, reps) for name, space in spaces]
    print(
        "\nA big state space drawn bounded (the paths to the violations, one summary per "
        "depth), medians"
    )
    lines = [["space", "states", "steps", "reps", "graph s", "draw s", "PNG s", "DOT s",
              "drawn", "summaries", "px"]]  # fmt: skip
    lines += [
        [f.name, f"{f.states:,}", f"{f.steps:,}", str(len(f.seconds["graph"]))]
        + [f"{median(f.seconds[part]):.2f}" for part in PARTS]
        + [str(f.drawn), str(f.summaries), f"{f.pixels[0]:,}x{f.pixels[1]:,}"]
        for f in rows
    ]
    show(lines, [False, *[True] * 10], "  ")
    out = []
    for f in rows:
        seconds = sum(median(f.seconds[part]) for part in ("graph", "draw", "png"))
        out.append(
            (
                seconds < MAX_SECONDS and f.drawn <= DRAWN_AT_MOST and f.summaries <= SUMMARY_BANDS,
                f"state space ({f.name}, {f.states:,} states) drawn bounded in under "
                f"{MAX_SECONDS:g} s: {seconds:.2f} s (graph + draw + PNG), {f.drawn} states "
                f"and {f.summaries} summaries drawn",
            )
        )
    return out
