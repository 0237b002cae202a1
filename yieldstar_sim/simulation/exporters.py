"""Who writes runs and exploration reports to files: the views, registered by the package.

The simulation layer never imports the views. ``yieldstar_sim/__init__.py``, where the layers
are put together, registers the views' writers here (``register_exporter``); ``run.export``
and ``report.export`` look them up (``exporter``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

Exporter = Callable[..., Path]
_EXPORTERS: dict[str, Exporter] = {}


def register_exporter(what: str, write: Exporter) -> None:
    """Let the views layer write runs (``what="run"``) and exploration reports
    (``"report"``)."""
    _EXPORTERS[what] = write


def exporter(what: str) -> Exporter:
    """The registered writer of ``what``, or an error that says how to get one."""
    try:
        return _EXPORTERS[what]
    except KeyError:
        raise RuntimeError(
            f"no exporter for a {what} is registered: import yieldstar_sim first"
        ) from None
