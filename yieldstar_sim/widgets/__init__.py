"""Jupyter widgets: step through a run, ask what-if, open an exploration's findings.

``Stepper(run)`` is the stepper; ``report_widget(report)`` shows an exploration's violations,
each one click from a stepper; ``state_space_widget(report)`` an exhaustive search's state space,
each violating path and any state one click from a stepper. The pieces they are made of work
without Jupyter: the records as of any event (``RecordBook``), each event in words
(``narrate``), pictures as PNG bytes (``RunPictures``, ``figure_png``) and re-runs with a fault
added (``what_if``, ``compare_runs``).

Importing this package imports neither ipywidgets nor matplotlib: they load when a widget or
a picture is first made.
"""

from __future__ import annotations

from yieldstar_sim.views.pictures import RunPictures, figure_image, figure_png
from yieldstar_sim.views.records import RecordBook, Row, Snapshot, Table, records_html
from yieldstar_sim.views.words import describe_event, narrate
from yieldstar_sim.widgets.report import ReportView, report_widget
from yieldstar_sim.widgets.statespace import StateSpaceView, state_space_widget
from yieldstar_sim.widgets.stepper import RunView, Stepper
from yieldstar_sim.widgets.whatif import (
    WHAT_IF_KINDS,
    ChoicePoint,
    RunDiff,
    choice_point_at,
    choice_points,
    compare_runs,
    fault_plan,
    what_if,
)

__all__ = [
    "WHAT_IF_KINDS",
    "ChoicePoint",
    "RecordBook",
    "ReportView",
    "Row",
    "RunDiff",
    "RunPictures",
    "RunView",
    "Snapshot",
    "StateSpaceView",
    "Stepper",
    "Table",
    "choice_point_at",
    "choice_points",
    "compare_runs",
    "describe_event",
    "fault_plan",
    "figure_image",
    "figure_png",
    "narrate",
    "records_html",
    "report_widget",
    "state_space_widget",
    "what_if",
]
