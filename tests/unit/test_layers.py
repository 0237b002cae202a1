"""The layers' arrows point one way (docs/architecture.md): a module imports only from its own
layer or the layers below it, type-only and function-local imports included; the simulation
kernel imports nothing of the package; no modules import each other in a circle, within a layer
either; and ``import yieldstar_sim`` loads neither networkx nor matplotlib."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "yieldstar_sim"

#: Bottom to top. A module's layer is the entry with the longest prefix of its dotted name.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "codec",
        (
            "core.codec",
            "core.codec_checks",
            "core.error_words",
            "core.files",
            "core.filenames",
            "core.frozen",
        ),
    ),
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
            "cli_run",
            "cli_signals",
            "cli_faults",
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


def _name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package).with_suffix("").parts
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


# --------------------------------------------------------------------------- import cycles

#: The import cycles allowed in the package, each as the exact set of modules in it: none.
#: A cycle here would have to be listed with why it cannot be broken; one that changes shape
#: (grows, shrinks, splits) fails until this list is brought up to date.
KNOWN_CYCLES: list[frozenset[str]] = []


def _import_graph(package: Path) -> nx.DiGraph:
    """Module -> module it imports, every import in the file counted (type-only and
    function-local ones too). ``from a import b`` is an arrow to ``a``, and to ``a.b`` when that
    is a module; the package ``yieldstar_sim`` itself is named ``__init__``."""
    names = {_name(path, package): path for path in sorted(package.rglob("*.py"))}
    graph = nx.DiGraph()
    for module, path in names.items():
        graph.add_node(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                if target == package.name or target.startswith(f"{package.name}."):
                    imported = target.removeprefix(package.name).lstrip(".") or "__init__"
                    if imported in names and imported != module:
                        graph.add_edge(module, imported)
    return graph


def _cycles(package: Path) -> list[frozenset[str]]:
    components = nx.strongly_connected_components(_import_graph(package))
    return sorted((frozenset(c) for c in components if len(c) > 1), key=sorted)


def test_no_module_imports_itself_through_others() -> None:
    found = _cycles(PACKAGE)
    new = [sorted(cycle) for cycle in found if cycle not in KNOWN_CYCLES]
    assert not new, "import cycles (break them; see KNOWN_CYCLES):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in new
    )
    changed = [sorted(cycle) for cycle in KNOWN_CYCLES if cycle not in found]
    assert not changed, (
        "these known cycles changed shape or are gone: update KNOWN_CYCLES\n"
        + "\n".join(" <-> ".join(cycle) for cycle in changed)
    )


def test_the_cycle_check_sees_a_type_only_circle(tmp_path: Path) -> None:
    # The check itself: a circle closed only by a TYPE_CHECKING import is still a circle, and
    # ``from package import module`` is an arrow to that module.
    package = tmp_path / "yieldstar_sim"
    (package / "views").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "views" / "__init__.py").write_text("")
    (package / "views" / "a.py").write_text("from yieldstar_sim.views import b\n")
    (package / "views" / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from yieldstar_sim.views.a import f\n"
    )
    (package / "views" / "c.py").write_text("import yieldstar_sim.views.a\n")
    assert _cycles(package) == [frozenset({"views.a", "views.b"})]


def test_importing_the_package_loads_neither_networkx_nor_matplotlib() -> None:
    # A fresh interpreter: every view module is imported, each drawing library only where used.
    probe = (
        "import sys, yieldstar_sim, yieldstar_sim.views; "
        "print(sorted({m.partition('.')[0] for m in sys.modules} & {'networkx', 'matplotlib'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"
