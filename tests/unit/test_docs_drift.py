"""The pages that quote the CLI read in the repository as the site shows them: the text under each
``<!-- yieldstar-sim ARGS -->`` marker is what the command prints now, and the list under
``<!-- built-in invariants -->`` is the simulator's (``docs/hooks.py`` writes both)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
_spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
assert _spec is not None
assert _spec.loader is not None
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)

PAGES = [
    page
    for page in sorted(DOCS.glob("*.md"))
    if hooks.MARKER.search(page.read_text()) or hooks.API_MARKER.search(page.read_text())
]


def test_some_pages_quote_the_cli() -> None:
    assert {page.name for page in PAGES} >= {"cli.md", "concepts.md", "api.md"}


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_committed_text_is_what_the_cli_prints_now(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert hooks.render(text) == text, f"{page.name} drifted: run python docs/hooks.py"


def test_a_marker_with_no_text_yet_gets_its_text_once() -> None:
    page = "# x\n\n<!-- yieldstar-sim list --faults -->\n\nafter\n"
    rendered = hooks.render(page)
    assert "$ yieldstar-sim list --faults\nFault kinds" in rendered
    assert rendered.endswith("<!-- end -->\n\nafter\n")
    assert hooks.render(rendered) == rendered


def test_an_api_directive_becomes_an_entry_that_reads_in_the_repository() -> None:
    page = "# x\n\n::: yieldstar_sim.core.steps.define_step\n\nafter\n"
    rendered = hooks.render(page)
    assert "<!-- api yieldstar_sim.core.steps.define_step -->" in rendered
    assert "define_step(name: str, body: Callable[..., Any]" in rendered
    assert "```pycon\n>>> send_welcome = define_step(" in rendered
    assert hooks.render(rendered) == rendered
    # The site renders the entry with mkdocstrings, from the same marker.
    site = hooks.on_page_markdown(rendered)
    assert site == "# x\n\n::: yieldstar_sim.core.steps.define_step\n\nafter\n"


def test_the_performance_table_is_the_recorded_figures() -> None:
    text = (DOCS / "performance.md").read_text(encoding="utf-8")
    assert hooks.PERFORMANCE_MARKER.search(text)
    figures = json.loads(hooks.FIGURES.read_text(encoding="utf-8"))["figures"]
    for figure in figures:
        assert figure["figure"] in text
        assert set(figure) == {
            "area",
            "figure",
            "against",
            "ratio",
            "target",
            "measured",
            "benchmark",
            "note",
        }
