"""Where runs and exploration reports find their writers (``run.export``, ``report.export``)
and their pictures and words (``run.timeline``, ``report.state_graph``, ``report.summary``, the
report's notebook table).

The simulation layer never imports the views, so the writers are handed to it: the composition
root (``yieldstar_sim/__init__.py``) registers the views' writers when the package is imported,
explicitly, and nothing registers anything as a side effect of importing a module.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

#: A writer: the run (or report), the path, then the options its ``export`` passes on.
Exporter = Callable[..., Path]

_EXPORTERS: dict[str, Exporter] = {}


def register_exporter(what: str, write: Exporter) -> None:
    """Make ``write`` the writer of runs (``what="run"``) or exploration reports (``"report"``)."""
    _EXPORTERS[what] = write


def exporter(what: str) -> Exporter:
    """The registered writer of ``what``, or an error that says how to get one."""
    try:
        return _EXPORTERS[what]
    except KeyError:
        raise RuntimeError(
            f"no exporter for a {what} is registered: import yieldstar_sim, which registers the"
            " views' writers"
        ) from None


#: A drawer: the run (or report, or state space), then the options its method passes on;
#: returns what the view makes (a matplotlib Figure, a graph, HTML).
Drawer = Callable[..., Any]

_DRAWERS: dict[str, Drawer] = {}


def register_drawer(what: str, draw: Drawer) -> None:
    """Make ``draw`` the drawer of ``what`` (``"timeline"``: ``run.timeline``;
    ``"state_graph"``: ``report.state_graph``...)."""
    _DRAWERS[what] = draw


def drawer(what: str) -> Drawer:
    """The registered drawer of ``what``, or an error that says how to get one."""
    try:
        return _DRAWERS[what]
    except KeyError:
        raise RuntimeError(
            f"no drawer of {what} is registered: import yieldstar_sim, which registers the "
            "views' drawers"
        ) from None
