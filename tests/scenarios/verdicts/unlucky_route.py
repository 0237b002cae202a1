"""A bug only one route of four shows, and the seed's run draws another: no fault is needed to
find it, only every option of the draw (``explore --max-faults 0``)."""

import yieldstar_sim as ys


@ys.workflow("route")
def route(step, params):
    return (
        yield from step.run(
            "pick", lambda: step.world.choice(["closed-depot", "north", "east", "south"])
        )
    )


def charged_on_every_route(run):
    """The route through the closed depot charges nothing."""
    (record,) = run.executions
    return "the closed depot charged nothing" if record.result == "closed-depot" else None


scenario = ys.Scenario(
    name="unlucky-route",
    workflows=[route],
    triggers=[ys.Trigger("route", {}, execution_id="route-1")],
    invariants=[charged_on_every_route],
    workers=1,
)
