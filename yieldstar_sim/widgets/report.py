"""The explorer in a notebook: its report with every violation one click away from the stepper.

(The progress bar is the explorer's own: ``ys.explore(..., progress=True)`` draws it with
``tqdm.auto``, which is a widget in a notebook and text elsewhere.)

>>> import yieldstar_sim as ys
>>> report = ys.explore(ys.load_scenario("trigger-in-step"), confirm=None)
>>> view = report_widget(report)
>>> view.open_buttons[0].click()
>>> view.stepper.run.ok
False
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.pictures import figure_png
from yieldstar_sim.widgets.box import OpensSteppers, picture

if TYPE_CHECKING:
    from yieldstar_sim.simulation.explorer import ExplorationReport, FoundViolation
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.widgets.stepper import Stepper


class ReportView(OpensSteppers):
    """An exploration report as widgets: the summary, the choice point x fault kind grid, and
    for each violation its sentence, its shrunk faults, an "open in stepper" button (the
    shrunk counterexample, at the first event where it parts from the nearest passing
    schedule) and a "nearest passing run" button.

    ``widget`` is the box to display; ``stepper`` the stepper opened last (None before a
    click), shown in ``output``.
    """

    def __init__(
        self,
        report: ExplorationReport,
        *,
        scenario: Scenario | None = None,
        grid: bool = True,
    ) -> None:
        import ipywidgets as widgets  # type: ignore[import-untyped]

        self.report = report
        self.scenario = scenario
        self.stepper: Stepper | None = None
        self.output = widgets.Output()
        self.open_buttons: list[Any] = []
        self.nearest_buttons: list[Any] = []
        colour = {"ok": "#1b7f4c", "violated": "#b00020"}.get(report.verdict, "#9a6b00")
        verdict = {
            "ok": "ok: no invariant was violated",
            "violated": f"violated: {len(report.violations)} invariant(s)",
        }.get(report.verdict, "incomplete")
        verdict += f" ({report.coverage()})"
        parts: list[Any] = []
        parts.append(
            widgets.HTML(
                f"<div style='font-size:16px'><b>{html.escape(report.scenario)}</b>: "
                f"<b style='color:{colour}'>{html.escape(verdict)}</b></div>"
                "<div style='font-family:monospace;font-size:12px;white-space:pre-wrap'>"
                f"{html.escape(report.summary())}</div>"
            )
        )
        if grid and report.verdicts:
            from yieldstar_sim.views.exploration import draw_exploration

            parts.append(picture(widgets, value=figure_png(draw_exploration(report))))
        for number, found in enumerate(report.violations, 1):
            parts.append(self._violation_box(widgets, number, found))
        parts.append(self.output)
        self.widget = widgets.VBox(parts, layout=widgets.Layout(width="100%"))

    def _violation_box(self, widgets: Any, number: int, found: FoundViolation) -> Any:
        text = widgets.HTML(
            f"<div style='margin-top:8px'><b>violation {number}: {html.escape(found.invariant)}"
            f"</b><div>{html.escape(found.message)}</div><div style='color:#444'>shrunk to: "
            f"{html.escape('; '.join(found.faults) or 'no faults')}</div>"
            + (
                f"<div style='color:#444'>first divergence from the nearest passing run: "
                f"{html.escape(found.divergence)}</div>"
                if found.divergence
                else ""
            )
            + "</div>"
        )
        open_button = widgets.Button(
            description="open in stepper", icon="play", button_style="danger",
            tooltip="replay the shrunk counterexample in the stepper",
        )  # fmt: skip
        open_button.on_click(lambda _: self.open(found))
        self.open_buttons.append(open_button)
        buttons = [open_button]
        if found.nearest_artifact is not None:
            nearest = widgets.Button(
                description="nearest passing run", icon="check", button_style="success",
                tooltip="the passing schedule closest to the violation, in the stepper",
            )  # fmt: skip
            nearest.on_click(lambda _: self.open(found, nearest=True))
            self.nearest_buttons.append(nearest)
            buttons.append(nearest)
        return widgets.VBox([text, widgets.HBox(buttons)])

    def open(self, found: FoundViolation, *, nearest: bool = False) -> Stepper:
        """Replay a violation's counterexample (or its nearest passing schedule) and show it
        in a stepper below the report, at the first diverging event."""
        from yieldstar_sim.simulation.run import replay
        from yieldstar_sim.widgets.stepper import Stepper

        artifact = found.nearest_artifact if nearest else found.artifact
        if artifact is None:
            raise ValueError("this violation has no nearest passing schedule")
        run = replay(artifact, scenario=self.scenario)
        what = "nearest passing run" if nearest else f"counterexample: {found.invariant}"
        self.stepper = self._show(
            Stepper(run, index=found.divergence_at or 0, title=f"{self.report.scenario}, {what}")
        )
        return self.stepper


def report_widget(
    report: ExplorationReport, *, scenario: Scenario | None = None, grid: bool = True
) -> ReportView:
    """An exploration report as widgets, each violation one click from the stepper.

    ``scenario`` is needed only for a scenario not loaded by name or file (its artifacts
    cannot load it themselves).
    """
    return ReportView(report, scenario=scenario, grid=grid)
