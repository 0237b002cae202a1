"""An event raised while its instance continues as new goes to the run that ended: lost.

The Durable Task framework's report (Azure/azure-functions-durable-extension#67; again in
microsoft/durabletask-dotnet#387), which go-workflows had too (cschleiden/go-workflows#493):
an event raised to an orchestration instance is written to the run that is current when it is
raised, and when that run continues as new before it took the event, the event goes with the
ended run, and nothing says so. The story of continue-as-new-event-fixed, on a runtime
with that bug (``EventsToCurrentRunRuntime``): without a fault the second add comes after the
first run ended, and nothing is lost; any one fault that makes it come while the first run
still works (the worker crashes or freezes in the add step and the run is replayed past t=30,
or the first event is held back) binds it to that run, which continues as new without it. The
built-in "every accepted event is consumed or reported" names the event, its instance and
the run it went to.
"""

from __future__ import annotations

from pathlib import Path

import yieldstar_sim as ys

fixed = ys.load_scenario(Path(__file__).with_name("continue_as_new_event_fixed.py"))

scenario = ys.Scenario(
    name="continue-as-new-event",
    description=__doc__,
    workflows=fixed.workflows,
    triggers=fixed.triggers,
    sends=fixed.sends,
    overlap_safe=fixed.overlap_safe,
    runtime="yieldstar_sim.examples.flawed_runtimes:EventsToCurrentRunRuntime",
)
