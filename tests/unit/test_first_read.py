"""What a newcomer had to guess is said where they look first, the README and the tutorial:
how ``step.world.trigger`` is called (it was only in api.md), that every workflow a step starts
goes in ``Scenario(workflows=...)``, which built-in check catches RFC 003's Problem with no
``at_most_once``, that ``explore`` stops at the first violation (``--all``), and how to check
a fix against its failure. Each statement is also true: the tests below check it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import yieldstar_sim as ys

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")


def said(text: str) -> str:
    """The text with its lines joined, so a sentence reads whole across a line break."""
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("page", [README, TUTORIAL], ids=["README", "tutorial"])
def test_the_first_pages_say_what_a_newcomer_had_to_guess(page: str) -> None:
    text = said(page)
    assert "step.world.trigger(" in text  # the call, not only its name
    assert "or a step starts** must be in `Scenario(workflows=[...])`" in text or (
        "or a step starts** is in `workflows=`" in text
    )
    assert "at most one admitted execution per step" in text
    assert "--scenario" in text  # a fix checked against its failure


def test_the_tutorial_and_the_cli_agree_on_where_explore_stops() -> None:
    text = said(TUTORIAL)
    assert "it stops at the first violation and says so" in text
    assert "`--all` is the same on the command line" in text


def test_the_built_in_check_catches_the_problem_with_no_invariant_of_yours() -> None:
    scenario = ys.load_scenario("trigger-in-step")
    scenario.invariants = ()
    run = ys.simulate(scenario, runtime="memory")
    assert [v.invariant for v in run.violations] == ["at most one admitted execution per step"]
    assert "step.start('ship', workflow, params)" in run.violations[0].message
