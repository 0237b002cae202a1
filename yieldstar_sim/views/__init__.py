"""Views: observers of a runtime's records or a run's trace. The kernel never imports them.

Importing the package is cheap: networkx and matplotlib load inside the functions that draw or
build a graph, never at import. The composition root (``yieldstar_sim/__init__.py``) hands
the writers here to runs and exploration reports (``run.export``, ``report.export``): the
simulation layer never imports the views.
"""

from __future__ import annotations

from yieldstar_sim.views.exploration import (
    ExplorationPictures,
    draw_divergence,
    draw_exploration,
    exploration_summary,
)
from yieldstar_sim.views.export import (
    FORMATS,
    export,
    html_report,
    to_dot,
    to_graphml,
    to_mermaid,
    to_node_link_json,
    write_exploration_pictures,
)
from yieldstar_sim.views.families import Family, collapse_families, families
from yieldstar_sim.views.figures import draw_run, figure_bytes
from yieldstar_sim.views.graph import (
    draw_execution_graph,
    execution_graph,
    graph_from_trace,
    run_graph,
)
from yieldstar_sim.views.layout import Layout, layered_layout
from yieldstar_sim.views.review import review_page, review_report_page, write_review
from yieldstar_sim.views.statespace import draw_state_graph, export_state_graph, state_graph
from yieldstar_sim.views.timeline import build_timeline, draw_timeline
from yieldstar_sim.views.timeline_labels import Timeline

__all__ = [
    "FORMATS",
    "ExplorationPictures",
    "Family",
    "Layout",
    "Timeline",
    "build_timeline",
    "collapse_families",
    "draw_divergence",
    "draw_execution_graph",
    "draw_exploration",
    "draw_run",
    "draw_state_graph",
    "draw_timeline",
    "execution_graph",
    "exploration_summary",
    "export",
    "export_state_graph",
    "families",
    "figure_bytes",
    "graph_from_trace",
    "html_report",
    "layered_layout",
    "review_page",
    "review_report_page",
    "run_graph",
    "state_graph",
    "to_dot",
    "to_graphml",
    "to_mermaid",
    "to_node_link_json",
    "write_exploration_pictures",
    "write_review",
]
