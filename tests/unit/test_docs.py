"""Documentation is tested: every docstring example in the package, and the README's code."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import yieldstar_sim

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(yieldstar_sim.__path__, prefix="yieldstar_sim.")
    if info.name != "yieldstar_sim.__main__"
)
README = Path(__file__).parents[2] / "README.md"


@pytest.mark.parametrize("name", ["yieldstar_sim", *MODULES])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's Python blocks run in order, in one namespace, like a reader's session."""
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    runnable = [block for block in blocks if "MyRuntime" not in block]
    assert len(runnable) >= 3, "the README lost its examples"
    namespace: dict[str, object] = {}
    for block in runnable:
        exec(compile(block, str(README), "exec"), namespace)
    assert (tmp_path / "order-42.replay.json").exists()
