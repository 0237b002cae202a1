"""An exhaustive search's state space in a notebook: the drawing, each violating state with the
shortest path to it, and any state one click from a stepper at the schedule that reaches it.

>>> import yieldstar_sim as ys
>>> report = ys.explore(
...     ys.load_scenario("booking-race"), strategy="exhaustive", max_faults=0, confirm=None
... )
>>> view = state_space_widget(report)
>>> view.open_buttons[0].click()
>>> view.stepper.run.violations[0].invariant
'no_oversell'
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from yieldstar_sim.views.pictures import figure_png
from yieldstar_sim.widgets.box import OpensSteppers, picture

if TYPE_CHECKING:
    from yieldstar_sim.simulation.explorer import ExplorationReport
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.widgets.stepper import Stepper

#: Past this many states the drawing is left out: the list and the chooser still work.
DRAWN_AT_MOST = 400


class StateSpaceView(OpensSteppers):
    """The state space of ``report`` as widgets: the completeness statement, the drawing, for
    each violating state its shortest path and an "open in stepper" button, and a chooser of
    any state with an "open" button. ``stepper`` is the stepper opened last, in ``output``."""

    def __init__(self, report: ExplorationReport, *, scenario: Scenario | None = None) -> None:
        import ipywidgets as widgets  # type: ignore[import-untyped]

        # networkx comes with the drawing, not with the package's import.
        from yieldstar_sim.views.statespace import draw_state_graph
        from yieldstar_sim.views.statespace_paths import describe_path, shortest_paths

        space = report.state_space
        if space is None:
            raise ValueError(
                "only strategy='exhaustive' explores a state space; this report is "
                f"{report.strategy!r}"
            )
        self.report, self.space = report, space
        self.scenario = scenario
        self.stepper: Stepper | None = None
        self.output = widgets.Output()
        self.open_buttons: list[Any] = []
        parts: list[Any] = [
            widgets.HTML(
                f"<div><b>{html.escape(report.scenario)}</b>: "
                f"{html.escape(report.coverage())}</div>"
            )
        ]
        if 0 < len(space) <= DRAWN_AT_MOST:
            parts.append(
                picture(widgets, value=figure_png(draw_state_graph(space, title=report.scenario)))
            )
        for key, path in shortest_paths(space).items():
            node = space.nodes[key]
            button = widgets.Button(
                description="open in stepper", icon="play", button_style="danger",
                tooltip="replay the schedule that reached this state",
            )  # fmt: skip
            button.on_click(lambda _, key=key: self.open(key))
            self.open_buttons.append(button)
            parts.append(
                widgets.VBox([
                    widgets.HTML(
                        f"<div style='margin-top:6px'><b>violates "
                        f"{html.escape(', '.join(node.violations))}</b> after "
                        f"{len(path)} choices: {html.escape(describe_path(path))}</div>"
                    ),
                    button,
                ])
            )  # fmt: skip
        self.chooser = widgets.Dropdown(
            options=[
                (f"depth {node.depth}: {node.label}"[:100], key)
                for key, node in space.nodes.items()
            ],
            description="any state",
        )
        self.open_any = widgets.Button(description="open", icon="play")
        self.open_any.on_click(lambda _: self.open(str(self.chooser.value)))
        parts += [widgets.HBox([self.chooser, self.open_any]), self.output]
        self.widget = widgets.VBox(parts, layout=widgets.Layout(width="100%"))

    def open(self, key: str) -> Stepper:
        """Run the schedule that reaches state ``key`` and show it in a stepper, at the first
        event of the choice point the state stands at."""
        from yieldstar_sim.simulation.run import simulate
        from yieldstar_sim.simulation.scenario_files import load_scenario
        from yieldstar_sim.widgets.stepper import Stepper

        scenario = self.scenario or load_scenario(self.report.scenario)
        run = simulate(
            scenario, self.report.seed, runtime="memory",
            schedule=self.report.schedule_to_state(key), scenario_faults=False,
            check_faults=False, strict_schedule=False,
        )  # fmt: skip
        depth = self.space.nodes[key].depth
        index = next((e.seq for e in run.trace if e.point is not None and e.point >= depth), 0)
        self.stepper = self._show(
            Stepper(run, index=index, title=f"{self.report.scenario}, state {key[:8]}")
        )
        return self.stepper


def state_space_widget(
    report: ExplorationReport, *, scenario: Scenario | None = None
) -> StateSpaceView:
    """An exhaustive search's state space as widgets, each violating path and any state one
    click from the stepper. ``scenario`` is needed only for a scenario not loaded by name."""
    return StateSpaceView(report, scenario=scenario)
