"""The public runtime-adapter conformance suite (RFC 003's runtime-adapter table, and more).

Every adapter, ours or a third party's, passes the same cases through one function::

    from yieldstar_sim.testing import check_runtime_adapter
    check_runtime_adapter(lambda clock: MyRuntime(clock=clock))

Each case is also available on its own, by the name of its row in RFC 003's table, in
``RUNTIME_ADAPTER_CASES`` (our pytest suite parametrizes over it). A case gets a fresh runtime
from the factory, drives its clock, arms its failure points, and raises ``AssertionError``
with a sentence naming what was expected and what happened.

The cases live in ``rfc003`` (the RFC's table), ``rules`` (our admission, lease, retention
and failure-point rules), ``target_ids`` (a started target's ID from its request) and
``business_ids`` (a caller-chosen ID that exists, under each
``on_existing_id`` policy: ``RETURN_EXISTING_ID_CASES`` run against runtimes made with
``on_existing_id="return_existing"``); ``_support`` holds what they share.
"""

from __future__ import annotations

from yieldstar_sim.testing._support import Case, RuntimeFactory
from yieldstar_sim.testing.business_ids import (
    a_repeated_trigger_returns_the_existing_execution,
    another_workflow_under_an_existing_id_is_refused,
    concurrent_triggers_of_one_id_admit_one_execution,
    concurrent_triggers_of_one_id_share_one_execution,
    the_existing_execution_is_returned_after_it_ended,
)
from yieldstar_sim.testing.rfc003 import (
    a_matching_request_repeats_after_the_target_is_terminal,
    a_new_start_commits,
    a_repeated_request_changes_the_workflow_id_or_parameters,
    a_start_with_detached_true,
    failure_before_a_new_start_commits,
    invalid_start_parameters,
    parameter_objects_have_different_key_order,
    start_commit_followed_by_a_lost_response,
    two_concurrent_calls_with_one_start_request_id,
    two_different_start_request_ids,
)
from yieldstar_sim.testing.rules import (
    a_child_is_created_once_and_joined_after,
    a_claim_finds_work_exactly_when_the_next_wake_is_due,
    a_claim_leases_one_execution_with_a_growing_fencing_token,
    a_direct_trigger_admits_a_due_execution_without_running_it,
    a_lease_of_a_pruned_incarnation_fences_nothing,
    a_released_lease_is_redelivered_after_the_delay,
    a_renewed_lease_lasts_longer,
    a_request_outlives_its_pruned_target,
    a_stale_lease_holder_is_fenced,
    a_start_from_an_unknown_caller_is_refused,
    a_terminal_caller_admits_no_new_target,
    a_terminal_callers_repeated_request_gets_its_target,
    a_terminal_outcome_is_stored,
    a_terminal_outcome_wakes_its_waiters,
    a_value_read_is_a_copy,
    an_expired_lease_fences_its_holder_even_unclaimed,
    an_owned_target_follows_its_owners_cancellation,
    caller_chosen_id_collision_is_refused,
    failure_points_before_and_after_commit,
    generated_ids_never_collide_with_caller_chosen_ones,
    invalid_execution_ids_are_refused,
    pruning_removes_a_callers_start_requests,
    steps_and_wakes_are_recorded_under_the_lease,
)
from yieldstar_sim.testing.target_ids import (
    a_reused_callers_requests_get_new_targets,
    a_targets_id_is_its_requests,
    rows_due_at_one_instant_are_claimed_by_id,
)

__all__ = [
    "RETURN_EXISTING_ID_CASES",
    "RFC003_RUNTIME_ADAPTER_CASES",
    "RUNTIME_ADAPTER_CASES",
    "RUNTIME_RULE_CASES",
    "Case",
    "RuntimeFactory",
    "a_child_is_created_once_and_joined_after",
    "a_claim_finds_work_exactly_when_the_next_wake_is_due",
    "a_claim_leases_one_execution_with_a_growing_fencing_token",
    "a_direct_trigger_admits_a_due_execution_without_running_it",
    "a_lease_of_a_pruned_incarnation_fences_nothing",
    "a_matching_request_repeats_after_the_target_is_terminal",
    "a_new_start_commits",
    "a_released_lease_is_redelivered_after_the_delay",
    "a_renewed_lease_lasts_longer",
    "a_repeated_request_changes_the_workflow_id_or_parameters",
    "a_repeated_trigger_returns_the_existing_execution",
    "a_request_outlives_its_pruned_target",
    "a_reused_callers_requests_get_new_targets",
    "a_stale_lease_holder_is_fenced",
    "a_start_from_an_unknown_caller_is_refused",
    "a_start_with_detached_true",
    "a_targets_id_is_its_requests",
    "a_terminal_caller_admits_no_new_target",
    "a_terminal_callers_repeated_request_gets_its_target",
    "a_terminal_outcome_is_stored",
    "a_terminal_outcome_wakes_its_waiters",
    "a_value_read_is_a_copy",
    "an_expired_lease_fences_its_holder_even_unclaimed",
    "an_owned_target_follows_its_owners_cancellation",
    "another_workflow_under_an_existing_id_is_refused",
    "caller_chosen_id_collision_is_refused",
    "check_runtime_adapter",
    "concurrent_triggers_of_one_id_admit_one_execution",
    "concurrent_triggers_of_one_id_share_one_execution",
    "failure_before_a_new_start_commits",
    "failure_points_before_and_after_commit",
    "generated_ids_never_collide_with_caller_chosen_ones",
    "invalid_execution_ids_are_refused",
    "invalid_start_parameters",
    "parameter_objects_have_different_key_order",
    "pruning_removes_a_callers_start_requests",
    "rows_due_at_one_instant_are_claimed_by_id",
    "runtime_adapter_failures",
    "start_commit_followed_by_a_lost_response",
    "steps_and_wakes_are_recorded_under_the_lease",
    "the_existing_execution_is_returned_after_it_ended",
    "two_concurrent_calls_with_one_start_request_id",
    "two_different_start_request_ids",
]


#: RFC 003's runtime-adapter table, row by row, in the RFC's order.
RFC003_RUNTIME_ADAPTER_CASES: dict[str, Case] = {
    "Failure before a new start commits": failure_before_a_new_start_commits,
    "Start commit followed by a lost response": start_commit_followed_by_a_lost_response,
    "Two concurrent calls with one start-request ID": (
        two_concurrent_calls_with_one_start_request_id
    ),
    "Two different start-request IDs": two_different_start_request_ids,
    "A new start commits": a_new_start_commits,
    "A start with detached: true": a_start_with_detached_true,
    "Invalid start parameters": invalid_start_parameters,
    "Parameter objects have different key order": parameter_objects_have_different_key_order,
    "A repeated request changes the workflow ID or parameters": (
        a_repeated_request_changes_the_workflow_id_or_parameters
    ),
    "A matching request repeats after the target is terminal": (
        a_matching_request_repeats_after_the_target_is_terminal
    ),
}


#: The admission, lease, retention and failure-point rules fixed in docs/decisions.md.
RUNTIME_RULE_CASES: dict[str, Case] = {
    "A caller-chosen ID that exists is refused": caller_chosen_id_collision_is_refused,
    "Generated IDs never collide with caller-chosen ones": (
        generated_ids_never_collide_with_caller_chosen_ones
    ),
    "Invalid execution IDs are refused": invalid_execution_ids_are_refused,
    "A direct trigger admits a due execution without running it": (
        a_direct_trigger_admits_a_due_execution_without_running_it
    ),
    "A start from an unknown caller is refused": a_start_from_an_unknown_caller_is_refused,
    "A claim leases one execution with a growing fencing token": (
        a_claim_leases_one_execution_with_a_growing_fencing_token
    ),
    "A stale lease holder is fenced": a_stale_lease_holder_is_fenced,
    "An expired lease fences its holder even unclaimed": (
        an_expired_lease_fences_its_holder_even_unclaimed
    ),
    "A renewed lease lasts longer": a_renewed_lease_lasts_longer,
    "A released lease is redelivered after the delay": (
        a_released_lease_is_redelivered_after_the_delay
    ),
    "A claim finds work exactly when the next wake is due": (
        a_claim_finds_work_exactly_when_the_next_wake_is_due
    ),
    "Steps and wakes are recorded under the lease": steps_and_wakes_are_recorded_under_the_lease,
    "A terminal outcome is stored": a_terminal_outcome_is_stored,
    "A value read is a copy": a_value_read_is_a_copy,
    "Pruning removes a caller's start requests": pruning_removes_a_callers_start_requests,
    "A request outlives its pruned target": a_request_outlives_its_pruned_target,
    "A lease of a pruned incarnation fences nothing": (
        a_lease_of_a_pruned_incarnation_fences_nothing
    ),
    "A child is created once and joined after": a_child_is_created_once_and_joined_after,
    "A terminal outcome wakes its waiters": a_terminal_outcome_wakes_its_waiters,
    "A terminal caller admits no new target": a_terminal_caller_admits_no_new_target,
    "A terminal caller's repeated request gets its target": (
        a_terminal_callers_repeated_request_gets_its_target
    ),
    "An owned target follows its owner's cancellation": (
        an_owned_target_follows_its_owners_cancellation
    ),
    "Failure points fail before and after commit": failure_points_before_and_after_commit,
    "Concurrent triggers of one caller-chosen ID admit one execution": (
        concurrent_triggers_of_one_id_admit_one_execution
    ),
    "A target's ID is its request's": a_targets_id_is_its_requests,
    "Rows due at one instant are claimed by ID": rows_due_at_one_instant_are_claimed_by_id,
    "A reused caller's requests get new targets": a_reused_callers_requests_get_new_targets,
}


#: The cases of the ``on_existing_id="return_existing"`` policy (DBOS-style): run them
#: against runtimes made with that option (``check_runtime_adapter`` runs the default's).
RETURN_EXISTING_ID_CASES: dict[str, Case] = {
    "A repeated trigger returns the existing execution": (
        a_repeated_trigger_returns_the_existing_execution
    ),
    "The existing execution is returned after it ended": (
        the_existing_execution_is_returned_after_it_ended
    ),
    "Another workflow under an existing ID is refused": (
        another_workflow_under_an_existing_id_is_refused
    ),
    "Concurrent triggers of one caller-chosen ID share one execution": (
        concurrent_triggers_of_one_id_share_one_execution
    ),
}


RUNTIME_ADAPTER_CASES: dict[str, Case] = {**RFC003_RUNTIME_ADAPTER_CASES, **RUNTIME_RULE_CASES}


def runtime_adapter_failures(make: RuntimeFactory) -> list[str]:
    """Run every runtime-adapter case against runtimes made by ``make`` and return a sentence
    for each that fails (``"<case>: <why>"``), instead of stopping at the first.

    >>> from yieldstar_sim import MemoryRuntime
    >>> runtime_adapter_failures(lambda clock: MemoryRuntime(clock=clock))
    []
    """
    failures = []
    for name, case in RUNTIME_ADAPTER_CASES.items():
        try:
            case(make)
        except Exception as error:  # an adapter that raises fails the case; go on
            why = (
                str(error)
                if isinstance(error, AssertionError)
                else f"raised {type(error).__name__}: {error}"
            )
            failures.append(f"{name}: {why}")
    return failures


def check_runtime_adapter(make: RuntimeFactory) -> None:
    """Run every runtime-adapter case against runtimes made by ``make``.

    Raises ``AssertionError`` naming the first case that fails and why.

    >>> from yieldstar_sim import MemoryRuntime
    >>> check_runtime_adapter(lambda clock: MemoryRuntime(clock=clock))
    """
    for name, case in RUNTIME_ADAPTER_CASES.items():
        try:
            case(make)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from error
