"""Workflow code that spins in pure Python: the wall-clock limit ends the run."""

import yieldstar_sim as ys


@ys.workflow("spin")
def spin(step, params):
    yield from step.run("before", lambda: "ok")
    while True:
        pass


scenario = ys.Scenario(
    name="spin-workflow",
    workflows=[spin],
    triggers=[ys.Trigger("spin", execution_id="spin-1")],
)
