"""A step body that spins in pure Python: the wall-clock limit ends the run."""

import yieldstar_sim as ys


def busy():
    while True:
        pass


@ys.workflow("spin")
def spin(step, params):
    yield from step.run("busy", busy)


scenario = ys.Scenario(
    name="spin-body",
    workflows=[spin],
    triggers=[ys.Trigger("spin", execution_id="spin-1")],
)
