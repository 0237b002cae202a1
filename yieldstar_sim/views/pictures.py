"""Pictures of a run as of any event, fast enough to follow a slider.

Drawing a run (graph and timeline) with matplotlib costs a few hundred milliseconds, too slow
to redraw at every slider move. So:

- the execution graph changes at a few events only (an admission, a claim, an outcome): it is
  drawn once per distinct graph and cached by the graph's content;
- the timeline is the same at every event but for the cursor: it is drawn once, kept as pixels,
  and each event gets a copy with the cursor painted in and the future dimmed.

Every figure is drawn on the Agg canvas and handed over as PNG bytes (no pyplot, no
``plt.show()``), which works in a kernel, in Voila and without any kernel at all.

>>> import yieldstar_sim as ys
>>> pictures = RunPictures(ys.simulate(ys.load_scenario("durable-start"), runtime="memory"))
>>> pictures.graph_png(10)[:4], pictures.timeline_png(10)[:4]
(b'\\x89PNG', b'\\x89PNG')
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.drawn_text import drawable_figure, glyphs_missing_quietly

if TYPE_CHECKING:
    import networkx as nx
    from IPython.display import Image
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from yieldstar_sim.simulation.result import SimulationRun

#: Pixels per inch of every picture: at this density the figures' 8-10 pt labels stay readable
#: when a notebook shows the picture at its own size (about 1000 px wide).
DPI = 90
#: The timeline's width in inches: the width of a notebook's output area at ``DPI``.
TIMELINE_WIDTH = 12.0
CURSOR_RGB = (204, 0, 0)
#: How much of the original colour the dimmed future keeps.
FUTURE_KEEP = 0.35


def figure_png(figure: Figure, *, dpi: float = DPI) -> bytes:
    """A matplotlib figure as PNG bytes, drawn on the Agg canvas (no pyplot, no display)."""
    drawable_figure(figure)  # characters a font draws, lengths bounded (``drawn_text``)
    buffer = io.BytesIO()
    with glyphs_missing_quietly():
        figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def figure_image(figure: Figure, *, dpi: float = DPI) -> Image:
    """A matplotlib figure as an ``IPython.display.Image`` (PNG): what a notebook displays,
    with the Agg backend or without a kernel, instead of calling ``plt.show()``."""
    from IPython.display import Image

    return Image(data=figure_png(figure, dpi=dpi), format="png")  # type: ignore[no-untyped-call]


def graph_signature(graph: nx.MultiDiGraph) -> tuple[Any, ...]:
    """What the drawing of an execution graph depends on: equal signatures, equal pictures."""
    nodes = tuple(sorted((str(n), tuple(sorted(d.items()))) for n, d in graph.nodes(data=True)))
    edges = tuple(
        sorted(
            (str(s), str(t), str(k), tuple(sorted((a, str(v)) for a, v in d.items())))
            for s, t, k, d in graph.edges(keys=True, data=True)
        )
    )
    return nodes, edges


class RunPictures:
    """The execution graph and the timeline of one run as of each event, as PNG bytes.

    The graph figure has one size for the whole run (that of the final graph), so the picture
    does not jump as executions appear. ``group`` draws plain siblings as one box (the
    stepper's *group siblings* checkbox sets it; ``False`` expands every group).
    """

    def __init__(self, run: SimulationRun, *, dpi: float = DPI, group: bool = True) -> None:
        from yieldstar_sim.views.graph import graph_from_trace
        from yieldstar_sim.views.timeline import build_timeline

        self.run = run
        self.dpi = dpi
        self.group = group
        self.events = list(run.trace)
        self.timeline = build_timeline(run.trace, run.scenario.worker_names)
        self._final = graph_from_trace(self.events)
        self._sizes: dict[bool, tuple[float, float]] = {}
        self._graphs: dict[tuple[Any, ...], bytes] = {}
        self._signatures: dict[int, tuple[Any, ...]] = {}
        self._base: Any = None
        self._geometry: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
        self._timeline_x: Any = None
        self._timelines: dict[int, bytes] = {}

    @property
    def graph_size(self) -> tuple[float, float]:
        """The graph figure's size in inches: that of the final graph, grouped into families
        or not as ``group`` says (one size for the whole run, so the picture does not jump)."""
        if self.group not in self._sizes:
            from yieldstar_sim.views.families import collapse_families

            final = collapse_families(self._final) if self.group else self._final
            self._sizes[self.group] = _size(final)
        return self._sizes[self.group]

    def widths(self) -> tuple[int, int]:
        """The graph's and the timeline's width in pixels."""
        return round(self.graph_size[0] * self.dpi), round(TIMELINE_WIDTH * self.dpi)

    # ------------------------------------------------------------------ the graph

    def graph(self, seq: int) -> nx.MultiDiGraph:
        """The execution graph as of event ``seq``."""
        from yieldstar_sim.views.graph import graph_from_trace

        return graph_from_trace(self.events, seq)

    def graph_key(self, seq: int) -> tuple[Any, ...]:
        """The signature of the graph as of ``seq``: events with equal keys share a picture."""
        if seq not in self._signatures:
            self._signatures[seq] = graph_signature(self.graph(seq))
        return self._signatures[seq]

    def graph_png(self, seq: int) -> bytes:
        """The execution graph as of event ``seq`` as PNG bytes (cached by graph content)."""
        key = (self.group, *self.graph_key(seq))
        if key not in self._graphs:
            from matplotlib.figure import Figure

            from yieldstar_sim.views.graph import draw_execution_graph

            figure = Figure(figsize=self.graph_size, layout="constrained")
            draw_execution_graph(self.graph(seq), ax=figure.add_subplot(), group=self.group)
            self._graphs[key] = figure_png(figure, dpi=self.dpi)
        return self._graphs[key]

    # ------------------------------------------------------------------ the timeline

    def _draw_timeline(self) -> None:
        import numpy as np
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from yieldstar_sim.views.timeline import draw_timeline

        height = 0.9 * len(self.timeline.lanes) + 1.5
        figure = Figure(figsize=(TIMELINE_WIDTH, height), dpi=self.dpi, layout="constrained")
        axes: Axes = figure.add_subplot()
        draw_timeline(self.timeline, ax=axes)
        canvas = FigureCanvasAgg(figure)
        canvas.draw()  # type: ignore[no-untyped-call]
        rgba = canvas.buffer_rgba()  # type: ignore[no-untyped-call]
        self._base = np.asarray(rgba)[..., :3].copy()
        self._geometry = tuple(axes.bbox.extents)  # type: ignore[assignment]
        self._timeline_x = axes.transData

    def timeline_png(self, seq: int) -> bytes:
        """The timeline with a cursor at event ``seq`` and the events after it dimmed."""
        if seq not in self._timelines:
            self._timelines[seq] = self._cursor_png(seq)
        return self._timelines[seq]

    def _cursor_png(self, seq: int) -> bytes:
        from PIL import Image as PILImage

        if self._base is None:
            self._draw_timeline()
        pixels = self._base.copy()
        rows = pixels.shape[0]
        left, bottom, right, top = self._geometry
        x = self.timeline.x_of.get(seq)
        if x is not None:
            column = round(float(self._timeline_x.transform((x, 0.0))[0]))
            upper, lower = max(int(rows - top), 0), min(int(rows - bottom), rows)
            future = pixels[upper:lower, column + 2 : int(right)]
            pixels[upper:lower, column + 2 : int(right)] = (
                future * FUTURE_KEEP + 255 * (1 - FUTURE_KEEP)
            ).astype(pixels.dtype)
            pixels[upper:lower, max(column - 1, int(left)) : column + 2] = CURSOR_RGB
        buffer = io.BytesIO()
        # compress_level 1: a few ms instead of tens; the PNG is a little bigger
        PILImage.fromarray(pixels).save(buffer, format="PNG", compress_level=1)
        return buffer.getvalue()


def _size(graph: nx.MultiDiGraph) -> tuple[float, float]:
    """The graph's figure size in inches for the stepper: its layout's, a little tighter
    than a figure of its own (the stepper shows no title or caption)."""
    from yieldstar_sim.views.graph import graph_size
    from yieldstar_sim.views.layout import layered_layout

    width, height = graph_size(layered_layout(graph))
    return width, max(2.6, height - 0.9)
