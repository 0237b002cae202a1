"""Documentation is tested: every docstring example in the package (the README's and the docs'
code blocks: test_readme_blocks.py)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import yieldstar_sim

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(yieldstar_sim.__path__, prefix="yieldstar_sim.")
    if info.name != "yieldstar_sim.__main__"
)
DECISIONS = Path(__file__).parents[2] / "docs" / "decisions.md"


@pytest.mark.parametrize("name", ["yieldstar_sim", *MODULES])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_decisions_say_what_a_nondeterminism_error_does() -> None:
    """The driver ends the delivery with it and never throws it into workflow code (held by
    test_authoring's test_workflow_code_cannot_handle_a_nondeterminism_error); the page must
    not promise that code can handle it."""
    text = " ".join(DECISIONS.read_text(encoding="utf-8").split())
    replay = text.split("- Replay:")[1].split(" - ")[0]  # that bullet, up to the next one
    assert "NondeterminismError" in replay
    assert "It is not thrown into workflow code and cannot be handled there" in replay
    assert "unless the code handles it" not in text
