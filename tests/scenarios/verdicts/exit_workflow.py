"""Workflow code that calls sys.exit(0): a failure of that workflow."""

import sys

import yieldstar_sim as ys


@ys.workflow("quit")
def quit_workflow(step, params):
    yield from step.run("hello", lambda: "hi")
    sys.exit(0)


scenario = ys.Scenario(
    name="exit-workflow",
    workflows=[quit_workflow],
    triggers=[ys.Trigger("quit", execution_id="quit-1")],
)
