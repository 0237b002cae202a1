"""The house rules a reader of the package can count on (issue 31): no module over 600 lines,
no module ``__getattr__`` (a name is where it is imported from, never forwarded), and no choice
point's op compared to a string literal (``Op`` members only, so a renamed op is one edit and a
misspelt one a type error). Import cycles and layers: ``test_layers.py``; trace text read only
by narration: ``test_trace_text.py``."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "yieldstar_sim"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_LINES = 600


def _is_op(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "op") or (
        isinstance(node, ast.Attribute) and node.attr == "op"
    )


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_is_literal(item) for item in node.elts)
    return False


def op_literal_comparisons(source: str) -> list[int]:
    """The lines where an ``op`` (a name or an attribute) is compared to a string literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for left, right in itertools.pairwise(sides):
            if (_is_op(left) and _is_literal(right)) or (_is_op(right) and _is_literal(left)):
                found.append(node.lineno)
    return found


def module_getattrs(source: str) -> list[int]:
    """The lines of module-level ``__getattr__`` definitions (under ``if`` blocks too)."""
    found = []
    body = list(ast.parse(source).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            found.append(node.lineno)
        elif isinstance(node, ast.If | ast.Try):
            body += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_600_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"


def test_no_module_forwards_names_through_getattr() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in MODULES
        for line in module_getattrs(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_no_op_is_compared_to_a_string_literal() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in MODULES
        for line in op_literal_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert not found, found


def test_the_checks_see_what_they_look_for() -> None:
    # The scans themselves, on code that breaks each rule: a scan that finds nothing anywhere
    # would pass the tests above vacuously.
    assert op_literal_comparisons(
        'if event.op == "claim": pass\nif op in ("start", x): pass\nif Op.CLAIM == op: pass\n'
    ) == [1, 2]
    assert module_getattrs(
        "import typing\nif not typing.TYPE_CHECKING:\n    def __getattr__(name): ...\n"
        "class A:\n    def __getattr__(self, name): ...\n"
    ) == [3]
