"""The layers' arrows point one way (docs/architecture.md): a module imports only from its own
layer or the layers below it, type-only and function-local imports included; the simulation
kernel imports nothing of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "yieldstar_sim"

#: Bottom to top. A module's layer is the entry with the longest prefix of its dotted name.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("codec", ("core.codec", "core.codec_checks", "core.filenames", "core.frozen")),
    ("model", ("core.model",)),
    ("core", ("core",)),
    ("runtime", ("runtime",)),
    ("conformance", ("testing",)),
    ("engine", ("engine",)),
    ("simulation", ("simulation",)),
    ("views", ("views",)),
    ("widgets", ("widgets",)),
    (
        "entry points",
        (
            "cli",
            "cli_files",
            "cli_pictures",
            "cli_explore",
            "demo",
            "errors",
            "examples",
            "pytest_plugin",
            "strategies",
            "__init__",
            "__main__",
        ),
    ),
]
RANK = {prefix: rank for rank, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes}
KERNEL = "simulation.kernel"


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def _layer(module: str) -> int:
    # The longest dotted prefix decides: core.model is in the model layer, core.driver in core.
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in RANK:
            return RANK[prefix]
    raise AssertionError(f"yieldstar_sim.{module} is in no layer: add it to LAYERS")


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every yieldstar_sim module ``path`` imports, anywhere in it, without the prefix."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        else:
            continue
        found += [
            (node.lineno, name.removeprefix("yieldstar_sim").lstrip("."))
            for name in names
            if name == "yieldstar_sim" or name.startswith("yieldstar_sim.")
        ]
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    for path in MODULES:
        _layer(_name(path))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_a_module_imports_nothing_from_a_higher_layer(path: Path) -> None:
    module = _name(path)
    upward = [
        f"line {line}: yieldstar_sim.{module} ({LAYERS[_layer(module)][0]}) imports "
        f"yieldstar_sim.{imported or '(the package)'} ({LAYERS[_layer(imported or '__init__')][0]})"
        for line, imported in _imports(path)
        if _layer(imported or "__init__") > _layer(module)
    ]
    assert not upward, "\n".join(upward)


def test_the_kernel_imports_nothing_of_the_package() -> None:
    assert _imports(PACKAGE / "simulation" / "kernel.py") == []


def test_the_check_sees_an_arrow_that_runs_back_up(tmp_path: Path) -> None:
    # The check itself: a simulation module importing the widgets lazily is caught.
    module = tmp_path / "run.py"
    module.write_text("def stepper():\n    from yieldstar_sim.widgets import Stepper\n")
    ((line, imported),) = _imports(module)
    assert (line, imported) == (2, "widgets")
    assert _layer(imported) > _layer(KERNEL)
