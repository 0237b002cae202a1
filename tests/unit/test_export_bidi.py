"""Bidirectional formatting characters in IDs and step keys never reorder an export's labels:
every format shows them as [U+XXXX] (JSON as \\u escapes, the same data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation import SimulationRun
from yieldstar_sim.views.export import FORMATS, export

BIDI = ["\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u202a", "\u200f"]
ORDER = "order-\u202e24"  # would show as "order-42" in a right-to-left override
STEP = "ship\u2066\u2067\u2068\u2069\u202a\u200f"


@ys.workflow("tricky")
def tricky(step: ys.StepRunner, params: Any) -> Any:
    yield from step.run(STEP, lambda: "done")
    return None


@pytest.fixture(scope="module")
def run() -> SimulationRun:
    scenario = ys.Scenario(
        name="bidi", workflows=[tricky], triggers=[ys.Trigger("tricky", execution_id=ORDER)]
    )
    return ys.simulate(scenario, seed=0, runtime="memory")


@pytest.mark.parametrize("format", FORMATS)
def test_no_export_holds_a_bidirectional_formatting_character(
    run: SimulationRun, tmp_path: Path, format: str
) -> None:
    (path,) = export(run, tmp_path, [format], stem="bidi").values()
    text = path.read_bytes().decode("utf-8", errors="replace")
    assert not [mark for mark in BIDI if mark in text], format
    if format in ("dot", "mermaid", "html", "graphml"):
        shown = "order-#91;U+202E#93;24" if format == "mermaid" else "order-[U+202E]24"
        assert shown in text  # in Mermaid, brackets are entities like every other syntax
    if format == "json":
        data = json.loads(text)
        assert ORDER in {node["id"] for node in data["nodes"]}  # the data itself is exact
