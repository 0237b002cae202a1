"""Documentation is tested: every docstring example in the package (the README's and the docs'
code blocks: test_readme_blocks.py)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import yieldstar_sim

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(yieldstar_sim.__path__, prefix="yieldstar_sim.")
    if info.name != "yieldstar_sim.__main__"
)


@pytest.mark.parametrize("name", ["yieldstar_sim", *MODULES])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
