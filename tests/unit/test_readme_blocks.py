"""Every Python block of the README and of docs/*.md runs as printed, in a fresh directory.

Each block runs alone, in a subprocess, in an empty temporary directory: what a newcomer gets
by pasting it into a file. A block whose first line is ``# continued from ...`` continues the
block before it in the same file (it says so where a reader sees it): the two run as one
script. The README's first workflows must also hold under exploration with one fault.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
CONTINUED = "# continued from"


@dataclass(frozen=True)
class Block:
    """One runnable script: a block, with the blocks it visibly continues."""

    document: Path
    line: int
    code: str

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def blocks(document: Path) -> list[Block]:
    """The document's Python blocks, each joined to the blocks it continues."""
    text = document.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in FENCE.finditer(text):
        code = match.group(1)
        line = text.count("\n", 0, match.start()) + 2
        if code.lstrip().startswith(CONTINUED):
            assert found, f"{document.name}:{line} continues a block, but none comes before it"
            code = found[-1].code + "\n" + code
        found.append(Block(document, line, code))
    return found


ALL_BLOCKS = [block for document in DOCUMENTS for block in blocks(document)]


def run_script(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    script = folder / "block.py"
    script.write_text(code, encoding="utf-8")
    environment = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, script.name], cwd=folder, capture_output=True, text=True,
        timeout=300, check=False, env=environment,
    )  # fmt: skip


def test_the_readme_and_the_docs_have_blocks_to_run() -> None:
    # The README keeps a first scenario and its verdicts; the examples in depth live in the
    # user guide (docs/guide.md), where they run as printed too.
    readme = [block for block in ALL_BLOCKS if block.document == README]
    assert len(readme) >= 2, "the README lost its first scenario"
    guide = [block for block in ALL_BLOCKS if block.document.name == "guide.md"]
    assert len(guide) >= 5, "the user guide lost its examples"
    assert len(ALL_BLOCKS) >= 16  # the count when the examples moved, less none


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[block.name for block in ALL_BLOCKS])
def test_the_block_runs_as_printed_in_a_fresh_directory(block: Block, tmp_path: Path) -> None:
    result = run_script(block.code, tmp_path)
    assert result.returncode == 0, f"{block.name} failed:\n{result.stderr[-3000:]}"


def _first_workflows() -> Block:
    return next(block for block in blocks(README) if '@ys.workflow("ship-order")' in block.code)


EXPLORE = """
scenario = ys.Scenario(
    name="readme",
    workflows=[charge_order, ship_order],
    steps=[send],
    triggers=[ys.Trigger("charge-order", {"order": 42}, execution_id="order-42")],
    invariants=[ys.at_most_once("courier.booked"), ys.at_most_once("card.charged")],
)
report = ys.explore(scenario, max_faults=1, stop_at_first=False, confirm=None)
assert report.ok, report.summary()
assert report.schedules_run > 50, report.summary()
"""


def test_the_readmes_first_workflows_hold_under_every_single_fault(tmp_path: Path) -> None:
    """The workflow a user copies first books one courier and charges once, whatever fault
    strikes whichever runtime call (a body may run twice: the idempotency keys hold it)."""
    result = run_script(_first_workflows().code + EXPLORE, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]


def test_without_its_idempotency_keys_the_readmes_workflow_would_book_twice(
    tmp_path: Path,
) -> None:
    """What the README's text says: the keys are what holds it, not luck of the schedule."""
    code = _first_workflows().code.replace(", idempotency_key=step.execution_id", "")
    assert "idempotency_key" not in code
    result = run_script(code + EXPLORE, tmp_path)
    assert result.returncode != 0
    assert "courier.booked happened 2 times" in result.stderr


LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#(?P<anchor>[^)\s]+))?\)")


def _anchors(document: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub and MkDocs make them."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", document.read_text(encoding="utf-8"), re.M):
        words = re.sub(r"[^\w\- ]", "", heading.strip().lower())
        found.add(words.replace(" ", "-"))
    return found


def test_the_readme_is_a_first_read() -> None:
    """What it is, the two commands, a first scenario, the verdicts, pictures and links: the
    rest lives in docs/, where a reader of the README follows a link (issue 36)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"the README has {len(lines)} lines; move detail into docs/"
    headings = [line for line in lines if line.startswith("## ")]
    assert "## Two commands" in headings
    assert "## Verdicts: ok, violated, incomplete" in headings


def test_the_readmes_links_reach_a_file_and_its_heading() -> None:
    # mkdocs --strict checks the docs' links, but the README is not part of the site.
    text = README.read_text(encoding="utf-8")
    for match in LINK.finditer(text):
        target = match["target"]
        if target.startswith(("http://", "https://")):
            continue
        path = ROOT / target
        assert path.exists(), f"the README links to {target}, which does not exist"
        if match["anchor"] and path.suffix == ".md":
            assert match["anchor"] in _anchors(path), f"no heading #{match['anchor']} in {target}"
