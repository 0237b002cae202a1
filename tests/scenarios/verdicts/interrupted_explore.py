"""trigger-in-step with an invariant that presses Ctrl-C on the eighth run, for `explore --all`."""

import itertools
import os
import signal

import yieldstar_sim as ys

base = ys.load_scenario("trigger-in-step")
runs = itertools.count(1)


def press_ctrl_c_on_the_eighth_run(run):
    """Not an invariant: a stand-in for a person pressing Ctrl-C during the search (SIGINT, as
    the terminal sends it: a KeyboardInterrupt raised here would be the invariant's own)."""
    if next(runs) == 8:
        os.kill(os.getpid(), signal.SIGINT)


scenario = ys.Scenario(
    name="interrupted-explore",
    workflows=base.workflows,
    triggers=base.triggers,
    invariants=[*base.invariants, press_ctrl_c_on_the_eighth_run],
)
