"""A step body that calls sys.exit(3): a failure of that body, not of the simulator."""

import sys

import yieldstar_sim as ys


@ys.workflow("quit")
def quit_workflow(step, params):
    yield from step.run("bye", lambda: sys.exit(3))


scenario = ys.Scenario(
    name="exit3-body",
    workflows=[quit_workflow],
    triggers=[ys.Trigger("quit", execution_id="quit-1")],
)
