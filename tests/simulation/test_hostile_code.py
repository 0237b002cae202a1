"""User code that misbehaves ends as a verdict that names it, never as a crash of the simulator:
a ``BaseException`` of its own (``GeneratorExit``, a class of its own, ``sys.exit``), a value
nested beyond any printing or pointing back at itself, an error whose message cannot be written.
"""

from __future__ import annotations

from typing import Any

import pytest

import yieldstar_sim as ys


class Mine(BaseException):
    """A class of the user's own, outside ``Exception``: ``except Exception`` lets it pass."""


def _raise(error: BaseException) -> Any:
    raise error


def _scenario(body: Any = None, code: Any = None, invariant: Any = None) -> ys.Scenario:
    @ys.workflow("w")
    def workflow(step: ys.StepRunner, params: Any) -> Any:
        if code is not None:
            code()
        if body is not None:
            yield from step.run("s", body)
        return None

    return ys.Scenario(
        name="hostile",
        workflows=[workflow],
        triggers=[ys.Trigger("w", execution_id="order-1")],
        invariants=[] if invariant is None else [invariant],
        workers=1,
    )


BASES = [
    pytest.param(lambda: GeneratorExit("closed"), "GeneratorExit: closed", id="GeneratorExit"),
    pytest.param(lambda: Mine("mine"), "Mine: mine", id="own-class"),
]


@pytest.mark.parametrize(("make", "words"), BASES)
def test_a_body_that_raises_a_base_exception_fails_its_step(make: Any, words: str) -> None:
    run = ys.simulate(_scenario(body=lambda: _raise(make())), runtime="memory")
    assert run.verdict == "violated"
    (violation,) = run.violations
    assert f"BaseExceptionRaised: step body 's' raised {words}" in violation.message


@pytest.mark.parametrize(("make", "words"), BASES)
def test_workflow_code_that_raises_a_base_exception_fails_the_execution(
    make: Any, words: str
) -> None:
    run = ys.simulate(_scenario(code=lambda: _raise(make())), runtime="memory")
    assert run.verdict == "violated"
    (violation,) = run.violations
    assert f"BaseExceptionRaised: the code of order-1 raised {words}" in violation.message


@pytest.mark.parametrize(("make", "words"), BASES)
def test_an_invariant_that_raises_a_base_exception_is_a_violation(make: Any, words: str) -> None:
    def check(run: Any) -> None:
        raise make()

    run = ys.simulate(_scenario(invariant=check), runtime="memory")
    (violation,) = run.violations
    assert violation.message == f"the invariant itself raised {words}"


def test_workflow_code_that_raises_as_it_is_abandoned_is_abandoned_all_the_same() -> None:
    """A workflow whose ``finally`` raises as the driver stops it (it waits on a delay when the
    run ends) is left there: the run ends as it would have."""

    @ys.workflow("w")
    def workflow(step: ys.StepRunner, params: Any) -> Any:
        try:
            yield from step.delay("wait", 10_000)
        finally:
            raise Mine("stop me not")

    scenario = ys.Scenario(
        name="stubborn", workflows=[workflow], triggers=[ys.Trigger("w")], workers=1, max_time=60
    )
    run = ys.simulate(scenario, runtime="memory")
    assert run.verdict == "incomplete", run.explain()


def test_a_keyboard_interrupt_is_ctrl_c_where_nothing_watches_the_signal() -> None:
    """In a notebook or your own program a KeyboardInterrupt is Ctrl-C's: it stops the run (the
    command line, which handles SIGINT itself, tells the code's own apart)."""
    with pytest.raises(KeyboardInterrupt):
        ys.simulate(_scenario(body=lambda: _raise(KeyboardInterrupt())), runtime="memory")


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def _deep(levels: int = 200_000) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("make", "path"),
    [
        pytest.param(_cycle, "result[0]: reference cycle back to step 's' result", id="cycle"),
        pytest.param(_deep, "result[0][0][0]", id="200,000 deep"),
    ],
)
@pytest.mark.parametrize("runtime", ["memory", "duckdb"])
def test_a_cyclic_or_deep_step_result_is_a_violation_naming_its_path(
    make: Any, path: str, runtime: str
) -> None:
    run = ys.simulate(_scenario(body=make), runtime=runtime)
    assert run.verdict == "violated"
    (violation,) = run.violations
    assert path in violation.message
    body = next(e for e in run.trace if e.kind == "body")
    assert body.data["returned"] == "<list: not a durable value>"


def test_an_error_whose_message_cannot_be_written_is_named_by_its_class() -> None:
    run = ys.simulate(_scenario(body=lambda: _raise(ValueError(_deep()))), runtime="memory")
    (violation,) = run.violations
    assert "ValueError: <its message could not be written: RecursionError>" in violation.message
