"""deploy-mismatch without its expectation: the START_REQUEST_MISMATCH fails the caller."""

import dataclasses

import yieldstar_sim as ys

scenario = dataclasses.replace(
    ys.load_scenario("deploy-mismatch"), name="mismatch-unexpected", expected=()
)
