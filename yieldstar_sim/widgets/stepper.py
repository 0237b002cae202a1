"""The stepper: step through a run event by event in Jupyter, and ask "what if it crashed here?".

At each event it shows the event in words, the execution graph as of that event, the timeline
with a cursor, and the runtime's records (executions, start requests, steps, leases, wakes,
effects) with the rows that event changed marked. At the current event's choice point a fault
can be added and the scenario re-run from the same seed: the new run opens in the stepper, with
its verdict and its difference from the run before.

Everything is ipywidgets driven from Python, and nothing needs a kernel to work: pictures are
PNG bytes in ``Image`` widgets, text is ``HTML`` widgets, so tests drive it by setting the
slider and clicking buttons.

>>> import yieldstar_sim as ys
>>> stepper = ys.Stepper(ys.simulate(ys.load_scenario("durable-start"), runtime="memory"))
>>> stepper.next_button.click()
>>> stepper.index, str(stepper.event.kind)
(1, 'call')
"""

from __future__ import annotations

import html
import time
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.faults import TIMED_KINDS, FaultKind, explored_seconds
from yieldstar_sim.views.pictures import RunPictures, figure_png, graph_signature
from yieldstar_sim.views.records import RecordBook, records_html
from yieldstar_sim.views.words import narrate
from yieldstar_sim.widgets.box import Shown, button, picture
from yieldstar_sim.widgets.graph_window import graph_window_html
from yieldstar_sim.widgets.whatif import (
    WHAT_IF_KINDS,
    ChoicePoint,
    RunDiff,
    choice_points,
    compare_runs,
    fault_plan,
    what_if,
)

if TYPE_CHECKING:
    from yieldstar_sim.simulation.result import SimulationRun
    from yieldstar_sim.simulation.trace import TraceEvent

#: The what-if menu: what each fault kind does, in words.
FAULT_CHOICES: tuple[tuple[str, str], ...] = tuple(
    (label, str(kind))
    for label, kind in zip(
        (
            "crash before the call",
            "crash after the call commits",
            "lose the call's response",
            "freeze the worker for N s",
            "infrastructure error",
            "stall this attempt for N s (at an elapse)",
            "set the worker's clock N s behind",
        ),
        WHAT_IF_KINDS,
        strict=True,
    )
)

_OK, _BAD = "#1b7f4c", "#b00020"


#: A run with more executions than this gets the graph around each event (``graph_window``),
#: not the whole graph redrawn at every event (seconds per picture at a hundred orders).
BIG_GRAPH = 16
#: Rows per records table shown for a big run (plus the rows the event changed).
TABLE_ROWS = 25


class RunView:
    """Everything the stepper shows of one run, computed per event on first use and cached.

    The graph is drawn from the record book's rows, the same state as the records tables, so
    the two agree (an execution under a lease is as the runtime records it, not "running")."""

    def __init__(self, run: SimulationRun, diff: RunDiff | None = None) -> None:
        self.run = run
        self.diff = diff
        self.events: list[TraceEvent] = list(run.trace)
        self.book = RecordBook.of_run(run)
        self.sentences = narrate(self.events)
        self.pictures = RunPictures(run)
        self.big = len(run.executions) > BIG_GRAPH
        self.records = lru_cache(maxsize=256)(self._records)
        self._graphs: dict[tuple[Any, ...], bytes] = {}
        points = choice_points(self.events)
        self._next_point: list[ChoicePoint | None] = [None] * len(self.events)
        upcoming: ChoicePoint | None = None
        for event in reversed(self.events):
            if event.point is not None and event.point in points:
                upcoming = points[event.point]
            self._next_point[event.seq] = upcoming

    def point(self, seq: int) -> ChoicePoint | None:
        """The choice point of event ``seq``, or of the next event that has one."""
        return self._next_point[seq]

    def _records(self, seq: int) -> str:
        return records_html(self.book.at(seq, limit=TABLE_ROWS if self.big else None))

    def graph_png(self, seq: int, *, group: bool = True) -> bytes:
        """The execution graph as of ``seq`` from the records, as PNG (cached by content)."""
        graph = self.book.graph_at(seq)
        for _, data in graph.nodes(data=True):
            data.pop("lease", None)  # the picture does not draw it: no new picture for it
        key = (group, *graph_signature(graph))
        if key not in self._graphs:
            from matplotlib.figure import Figure

            from yieldstar_sim.views.graph import draw_execution_graph

            figure = Figure(figsize=self.pictures.graph_size, layout="constrained")
            draw_execution_graph(graph, ax=figure.add_subplot(), group=group)
            self._graphs[key] = figure_png(figure, dpi=self.pictures.dpi)
        return self._graphs[key]

    def graph_html(self, seq: int) -> str:
        """The executions around event ``seq`` as SVG (a big run's graph)."""
        return graph_window_html(self.book, self.events, seq)

    def event_html(self, seq: int) -> str:
        """The event in words, with its place in the run and its trace line."""
        event = self.events[seq]
        where = [f"event #{seq} / #{len(self.events) - 1}", f"t={event.t:g}"]
        if event.worker:
            where.append(event.worker)
        if event.point is not None:
            where.append(f"choice point #{event.point}")
        line = f"{event.kind:<8} {event.text}"
        colour = {"fault": _BAD, "crash": _BAD, "refused": _BAD, "error": "#b35900"}.get(
            event.kind, "#222"
        )
        return (
            "<div class='ys-event' style='padding:4px 0'>"
            f"<div style='color:#555;font-size:13px'>{html.escape(' · '.join(where))}</div>"
            f"<div style='font-size:16px;line-height:1.4;color:{colour};margin:2px 0'>"
            f"{html.escape(self.sentences[seq])}</div>"
            f"<div style='font-family:monospace;font-size:12px;color:#444;white-space:pre-wrap'>"
            f"{html.escape(line)}</div></div>"
        )


class Stepper(Shown):
    """Step through a run's trace: a slider over its events, previous / play / next, and at
    each event the event in words, the execution graph, the timeline with a cursor and the
    runtime's records; a what-if panel re-runs the scenario with a fault at the current
    choice point.

    Display it as a cell's last expression (or ``display(stepper)``); ``stepper.widget`` is the
    ipywidgets box, to put in a layout of your own. ``stepper.runs`` holds every run opened so
    far, the current one last.

    Parts, for scripts and tests: ``slider``, ``play``, ``previous_button``, ``next_button``,
    ``event_html``, ``group_siblings``, ``graph_image`` (the whole graph, PNG), ``graph_html``
    (a big run's graph: the executions each event is about, SVG), ``timeline_image``,
    ``records_html``, ``fault_kind``, ``freeze_seconds``, ``rerun_button``, ``back_button``,
    ``whatif_html``.
    """

    def __init__(self, run: SimulationRun, *, index: int = 0, title: str | None = None) -> None:
        import ipywidgets as widgets  # type: ignore[import-untyped]

        self.title = title
        self.runs: list[SimulationRun] = [run]
        self._views: list[RunView] = [RunView(run)]
        self.render_seconds = 0.0
        """How long the last event took to show (records, pictures and text)."""
        last = max(len(run.trace) - 1, 0)
        self.header_html = widgets.HTML()
        self.slider = widgets.IntSlider(
            value=0, min=0, max=last, step=1, description="event #", continuous_update=True,
            readout=True, layout=widgets.Layout(width="min(640px, 100%)"),
            style={"description_width": "initial"},
        )  # fmt: skip
        self.play = widgets.Play(
            value=0, min=0, max=last, step=1, interval=900, show_repeat=False,
            description="play", tooltip="play the run event by event",
        )  # fmt: skip
        self.previous_button = button(
            widgets, "previous", "step-backward", "110px", tooltip="the event before"
        )
        self.next_button = button(
            widgets, "next", "step-forward", "90px", tooltip="the event after"
        )
        widgets.link((self.play, "value"), (self.slider, "value"))
        self.event_html = widgets.HTML()
        self.graph_image = picture(widgets)
        self.graph_html = widgets.HTML(layout=widgets.Layout(display="none"))
        self.graph_html.add_class("ys-graph-window")
        self.timeline_image = picture(widgets)
        # Classes a page (and the browser test) can find the parts by.
        self.graph_image.add_class("ys-graph")
        self.timeline_image.add_class("ys-timeline")
        self.records_html = widgets.HTML()
        self.point_html = widgets.HTML()
        self.fault_kind = widgets.Dropdown(
            options=list(FAULT_CHOICES), value=str(FaultKind.CRASH), description="fault",
            layout=widgets.Layout(width="300px"),
        )  # fmt: skip
        freeze = run.scenario.lease_seconds + run.scenario.redelivery_delay
        self._seconds = {kind: explored_seconds(kind, freeze) or freeze for kind in TIMED_KINDS}
        """Each timed kind's length when chosen: what the explorer would give it."""
        self.freeze_seconds = widgets.BoundedFloatText(
            value=freeze, min=0.001, max=1e6, step=5, description="seconds", disabled=True,
            layout=widgets.Layout(width="160px"),
        )  # fmt: skip
        self.rerun_button = button(
            widgets, "re-run with this fault", "redo", "210px", button_style="warning"
        )
        self.back_button = button(
            widgets, "back to the previous run", "undo", "220px", disabled=True
        )
        self.whatif_html = widgets.HTML()

        self.previous_button.on_click(lambda _: self.previous())
        self.next_button.on_click(lambda _: self.next())
        self.rerun_button.on_click(lambda _: self._rerun_clicked())
        self.back_button.on_click(lambda _: self.back())
        self.fault_kind.observe(self._kind_changed, names="value")
        self.slider.observe(self._moved, names="value")
        # Many siblings alike (99 line items) are one box; unticked, every execution is drawn.
        self.group_siblings = widgets.Checkbox(
            value=True, description="group alike siblings", indent=False,
            tooltip="draw siblings that share workflow, parent, step-key pattern and status "
            "as one box",
        )  # fmt: skip
        self.group_siblings.observe(self._grouping_changed, names="value")

        heading = "<div style='font-weight:bold;margin-top:6px'>{}</div>"
        self.widget = widgets.VBox(
            [
                self.header_html,
                widgets.HBox(
                    [self.previous_button, self.play, self.next_button, self.slider],
                    layout=widgets.Layout(align_items="center", flex_flow="row wrap"),
                ),
                self.event_html,
                widgets.HTML(heading.format("execution graph as of this event")),
                self.group_siblings,
                self.graph_image,
                self.graph_html,
                widgets.HTML(heading.format("worker timeline (cursor: this event)")),
                self.timeline_image,
                widgets.HTML(heading.format("the runtime's records as of this event")),
                self.records_html,
                widgets.HTML(heading.format("what if a fault struck here?")),
                self.point_html,
                widgets.HBox(
                    [self.fault_kind, self.freeze_seconds, self.rerun_button, self.back_button],
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
                self.whatif_html,
            ],
            layout=widgets.Layout(width="100%"),
        )
        self.widget.add_class("ys-stepper")
        self._show_run()
        self.go(index)

    # ------------------------------------------------------------------ the public surface

    @property
    def run(self) -> SimulationRun:
        """The run shown now."""
        return self.runs[-1]

    @property
    def view(self) -> RunView:
        """The cached views of the run shown now."""
        return self._views[-1]

    @property
    def index(self) -> int:
        """The current event's sequence number."""
        return int(self.slider.value)

    @property
    def event(self) -> TraceEvent:
        """The current event."""
        return self.view.events[self.index]

    @property
    def diff(self) -> RunDiff | None:
        """How the run shown differs from the one before it (None for the first run)."""
        return self.view.diff

    def go(self, seq: int) -> None:
        """Show event ``seq`` (clamped to the trace)."""
        seq = min(max(int(seq), 0), int(self.slider.max))
        if seq == self.slider.value:
            self._render(seq)
        else:
            self.slider.value = seq  # the observer renders

    def next(self) -> None:
        """Show the next event."""
        self.go(self.index + 1)

    def previous(self) -> None:
        """Show the previous event."""
        self.go(self.index - 1)

    def what_if(self, kind: FaultKind | str, *, seconds: float | None = None) -> SimulationRun:
        """Re-run the scenario from the same seed with a ``kind`` fault at the current event's
        choice point (or the next one), open the new run here at that point, and return it."""
        point = self.view.point(self.index)
        if point is None:
            raise ValueError("no runtime call at or after this event: nowhere to put a fault")
        before = self.run
        fault = FaultKind(kind)
        freeze = seconds if fault in TIMED_KINDS else None
        rerun = what_if(before, fault, point.index, seconds=freeze)
        from yieldstar_sim.simulation.faults import Fault

        _, notes = fault_plan(before, Fault(fault, at=point.index, seconds=freeze))
        self.open(rerun, diff=compare_runs(before, rerun, notes), index=point.seq)
        return rerun

    def open(self, run: SimulationRun, *, diff: RunDiff | None = None, index: int = 0) -> None:
        """Show another run (kept in ``runs``; ``back()`` returns to the one before)."""
        self.runs.append(run)
        self._views.append(RunView(run, diff))
        self._show_run()
        self.go(index)

    def back(self) -> None:
        """Return to the run shown before the last what-if."""
        if len(self.runs) < 2:
            return
        self.runs.pop()
        self._views.pop()
        self._show_run()
        self.go(0)

    # ------------------------------------------------------------------ drawing

    def _show_run(self) -> None:
        run, view = self.run, self.view
        last = max(len(view.events) - 1, 0)
        # Lower the value before the bounds so that no observer sees an out-of-range event.
        self.slider.value = min(self.slider.value, last)
        self.slider.max = last
        self.play.max = last
        colour = _OK if run.ok else _BAD
        faults = "; ".join(fault.describe() for fault in run.faults) or "no faults"
        number = f"run {len(self.runs)}: " if len(self.runs) > 1 else ""
        title = self.title or run.scenario.story or run.scenario.name
        self.header_html.value = (
            "<div class='ys-header' style='margin-bottom:4px'>"
            f"<div style='font-size:18px;font-weight:bold'>{html.escape(number + title)}</div>"
            f"<div style='font-size:14px'>{html.escape(run.scenario.name)}, seed {run.seed}, "
            f"{html.escape(run.runtime_kind)}, {len(view.events)} events: "
            f"<b style='color:{colour}'>{html.escape(run.verdict_text)}</b></div>"
            f"<div style='font-size:13px;color:#444'>faults: {html.escape(faults)}</div>"
            + "".join(
                f"<div style='font-size:13px;color:{_BAD}'>{html.escape(str(v))}</div>"
                for v in run.violations
            )
            + "</div>"
        )
        self.back_button.disabled = len(self.runs) < 2
        graph_width, timeline_width = view.pictures.widths()
        self.graph_image.layout.width = f"{graph_width}px"
        self.graph_image.layout.display = "none" if view.big else None
        self.graph_html.layout.display = None if view.big else "none"
        self.group_siblings.layout.display = "none" if view.big else None
        self.timeline_image.layout.width = f"{timeline_width}px"
        self.whatif_html.value = "" if view.diff is None else (
            "<div style='border-left:4px solid #999;padding-left:8px'>"
            f"<b>compared with the run before</b>{view.diff.html()}</div>"
        )  # fmt: skip

    def _grouping_changed(self, change: dict[str, Any]) -> None:
        self._render(self.slider.value)

    def _moved(self, change: dict[str, Any]) -> None:
        self._render(int(change["new"]))

    def _render(self, seq: int) -> None:
        started = time.perf_counter()
        view = self.view
        if not view.events:
            self.event_html.value = "<i>the trace is empty</i>"
            return
        self.event_html.value = view.event_html(seq)
        self.records_html.value = view.records(seq)
        if view.big:
            self.graph_html.value = view.graph_html(seq)
        else:
            graph = view.graph_png(seq, group=self.group_siblings.value)
            if self.graph_image.value != graph:
                self.graph_image.value = graph
        self.timeline_image.value = view.pictures.timeline_png(seq)
        self.previous_button.disabled = seq <= 0
        self.next_button.disabled = seq >= len(view.events) - 1
        point = view.point(seq)
        self.rerun_button.disabled = point is None
        if point is None:
            self.point_html.value = (
                "<div style='color:#555'>no runtime call at or after this event: "
                "nowhere to put a fault</div>"
            )
        else:
            here = "this event's" if view.events[seq].point == point.index else "the next"
            self.point_html.value = (
                f"<div style='color:#333'>{here} choice point: <b>#{point.index}</b> "
                f"<code>{html.escape(point.label)}</code> (event #{point.seq}); the re-run "
                "keeps the seed, so it makes the same choices until then</div>"
            )
        self.render_seconds = time.perf_counter() - started

    def _kind_changed(self, change: dict[str, Any]) -> None:
        kind = FaultKind(change["new"])
        self.freeze_seconds.disabled = kind not in TIMED_KINDS
        if kind in TIMED_KINDS:
            # Each kind's own length: a freeze past the lease, a stall past it and its retry,
            # a skew its default.
            self.freeze_seconds.value = self._seconds[kind]

    def _rerun_clicked(self) -> None:
        try:
            self.what_if(self.fault_kind.value, seconds=float(self.freeze_seconds.value))
        except Exception as error:  # shown in the widget: a click has no traceback to read
            self.whatif_html.value = (
                f"<div style='color:{_BAD}'>the re-run failed: "
                f"{html.escape(type(error).__name__)}: {html.escape(str(error))}</div>"
            )
