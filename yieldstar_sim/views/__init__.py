"""Views: observers of a runtime's records or a run's trace. The kernel never imports them."""

from __future__ import annotations

from yieldstar_sim.views.graph import draw_execution_graph, execution_graph

__all__ = ["draw_execution_graph", "execution_graph"]
