"""An exploration's report as widgets: each violation opens in the stepper with one click."""

from __future__ import annotations

import subprocess
import sys

import yieldstar_sim as ys
from yieldstar_sim.widgets import Stepper, report_widget


def test_a_violation_opens_in_the_stepper_at_its_divergence() -> None:
    report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None)
    assert not report.ok
    view = report_widget(report)
    assert len(view.open_buttons) == len(report.violations) >= 1
    assert view.stepper is None
    view.open_buttons[0].click()
    stepper = view.stepper
    assert isinstance(stepper, Stepper)
    found = report.violations[0]
    assert not stepper.run.ok
    assert stepper.run.trace_digest() == found.artifact.trace_digest
    assert stepper.index == found.divergence_at
    assert "counterexample" in stepper.header_html.value
    # shown below the report without a kernel: one display item, the stepper's box
    (item,) = view.output.outputs
    assert item["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == (
        stepper.widget.model_id
    )
    view.nearest_buttons[0].click()
    assert view.stepper is not stepper
    assert view.stepper.run.ok
    assert len(view.output.outputs) == 1


def test_a_clean_report_has_nothing_to_open() -> None:
    report = ys.explore(ys.load_scenario("durable-start"), confirm=None)
    view = report_widget(report, grid=False)
    assert report.ok
    assert view.open_buttons == []
    assert "no invariant was violated" in view.widget.children[0].value
    assert "application/vnd.jupyter.widget-view+json" in view._repr_mimebundle_()


def test_importing_the_package_loads_no_widget_or_drawing_library() -> None:
    """The CLI imports yieldstar_sim: it must not pay for ipywidgets, matplotlib, networkx."""
    code = (
        "import sys, yieldstar_sim; "
        "print(sorted(m for m in ('ipywidgets', 'matplotlib', 'networkx', 'IPython') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
