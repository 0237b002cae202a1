"""Views: observers of a runtime's records or a run's trace. The kernel never imports them.

Importing the package is cheap: each name loads its module (and networkx or matplotlib) when
first used. Runs and exploration reports find their writers here (``run.export``,
``report.export``): the simulation layer never imports the views.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.explorer.statespace import register_view
from yieldstar_sim.simulation.exporters import register_exporter

if TYPE_CHECKING:
    from pathlib import Path

    from yieldstar_sim.views.exploration import (
        ExplorationPictures,
        draw_divergence,
        draw_exploration,
        write_exploration_pictures,
    )
    from yieldstar_sim.views.export import (
        FORMATS,
        export,
        figure_bytes,
        html_report,
        to_dot,
        to_graphml,
        to_mermaid,
        to_node_link_json,
    )
    from yieldstar_sim.views.figures import draw_run
    from yieldstar_sim.views.graph import draw_execution_graph, execution_graph, graph_from_trace
    from yieldstar_sim.views.review import review_page, review_report_page, write_review
    from yieldstar_sim.views.statespace import (
        draw_state_graph,
        export_state_graph,
        state_graph,
    )
    from yieldstar_sim.views.timeline import Timeline, build_timeline, draw_timeline

#: Where each public name lives.
_HOMES = {
    "exploration": (
        "ExplorationPictures", "draw_divergence", "draw_exploration", "write_exploration_pictures",
    ),
    "export": (
        "FORMATS", "export", "figure_bytes", "html_report", "to_dot", "to_graphml", "to_mermaid",
        "to_node_link_json",
    ),
    "figures": ("draw_run",),
    "graph": ("draw_execution_graph", "execution_graph", "graph_from_trace"),
    "review": ("review_page", "review_report_page", "write_review"),
    "statespace": ("draw_state_graph", "export_state_graph", "state_graph"),
    "timeline": ("Timeline", "build_timeline", "draw_timeline"),
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "FORMATS",
    "ExplorationPictures",
    "Timeline",
    "build_timeline",
    "draw_divergence",
    "draw_execution_graph",
    "draw_exploration",
    "draw_run",
    "draw_state_graph",
    "draw_timeline",
    "execution_graph",
    "export",
    "export_state_graph",
    "figure_bytes",
    "graph_from_trace",
    "html_report",
    "review_page",
    "review_report_page",
    "state_graph",
    "to_dot",
    "to_graphml",
    "to_mermaid",
    "to_node_link_json",
    "write_exploration_pictures",
    "write_review",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'yieldstar_sim.views' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"yieldstar_sim.views.{module}"), name)
    globals()[name] = value
    return value


def _export_run(run: Any, path: str | Path, format: str | None = None) -> Path:
    from yieldstar_sim.views.review import export_file

    return export_file(run, path, format)


def _export_report(report: Any, path: str | Path, *, scenario: Any = None) -> Path:
    from yieldstar_sim.views.review import write_review

    return write_review(report, path, scenario=scenario)


register_exporter("run", _export_run)
register_exporter("report", _export_report)


def _state_view(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        from yieldstar_sim.views import statespace

        return getattr(statespace, name)(*args, **kwargs)

    return call


for _name in ("state_graph", "draw_state_graph", "export_state_graph"):
    register_view(_name, _state_view(_name))


class _Views(types.ModuleType):
    """The package, keeping its function ``export`` when the submodule of the same name is
    imported (the import system would set the package's attribute to the submodule)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "export" and isinstance(value, types.ModuleType):
            value = value.export
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Views
