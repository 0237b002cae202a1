"""A run's totals (issue 53, item 2): executions per workflow and status, effects per kind with
the keys made more than once, start requests and how many returned an existing target, each
worker's deliveries, redeliveries, crashes and freezes; printed by the command line, in its
JSON, beside the graph in every picture and export and on the review page."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from _review_size import trigger_in_step

import yieldstar_sim as ys
from yieldstar_sim.simulation import Totals
from yieldstar_sim.views import export

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def bug300() -> ys.SimulationRun:
    return ys.simulate(trigger_in_step(300, crashed=150), seed=0, runtime="memory")


def test_the_totals_count_what_a_reviewer_would_count(bug300: ys.SimulationRun) -> None:
    totals = bug300.totals()
    assert totals.executions == {
        "charge-order": {"completed": 300},
        "ship-order": {"completed": 301},
    }
    assert totals.execution_count == 601
    assert (totals.effects["card.charged"].seen, totals.effects["courier.booked"].seen) == (
        300,
        301,
    )
    assert totals.effects["courier.booked"].duplicates == {}  # two keys: the bug
    assert totals.starts.calls == 0  # a trigger inside a step is no start request
    workers = totals.workers
    assert sorted(workers) == ["w1", "w2", "w3"]
    assert sum(w.deliveries for w in workers.values()) == sum(
        1 for e in bug300.trace if e.kind == "call" and e.op == "claim" and e.execution_id
    )
    assert sum(w.crashes for w in workers.values()) == 1
    assert sum(w.redeliveries for w in workers.values()) == 1  # order-150 after the crash
    assert Totals.from_json(json.loads(json.dumps(totals.to_json()))) == totals


def test_starts_that_returned_their_target_and_keys_made_twice() -> None:
    durable = ys.simulate(ys.load_scenario("durable-start"), runtime="memory").totals()
    assert (durable.starts.requests, durable.starts.calls) == (1, 2)
    assert (durable.starts.created, durable.starts.returned_existing) == (1, 1)
    assert "1 returned an existing target" in str(durable)
    joined = ys.simulate(ys.load_scenario("join-child"), runtime="memory").totals()
    assert joined.starts.returned_existing == 1  # recheck-42 joins the running fulfil
    retried = ys.simulate(ys.load_scenario("client-retry-same-request-id"), runtime="memory")
    assert retried.totals().starts.returned_existing == 1  # the client's retry, same ID
    zombie = ys.simulate(ys.load_scenario("heartbeat-zombie"), runtime="memory").totals()
    trucks = zombie.effects["truck.dispatched"]
    assert (trucks.made, trucks.seen, trucks.duplicates) == (2, 1, {"truck-42": 2})
    assert "truck-42 \u00d72" in str(zombie)
    frozen = ys.simulate(ys.load_scenario("frozen-worker"), runtime="memory").totals()
    assert sum(w.freezes for w in frozen.workers.values()) == 1


def test_the_command_line_prints_the_totals_and_puts_them_in_its_json(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "yieldstar_sim.cli", "run", "trigger-in-step", "--runtime",
           "memory", "--out", "out"]  # fmt: skip
    said = subprocess.run([*cli, "--quiet"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert said.returncode == 1, said.stderr
    assert "totals:\n  executions (3): charge-order 1 completed; ship-order 2 completed\n" in (
        said.stdout
    )
    data = subprocess.run([*cli, "--json"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    totals = json.loads(data.stdout)["totals"]
    assert totals["executions"] == {
        "charge-order": {"completed": 1},
        "ship-order": {"completed": 2},
    }
    assert totals["effects"]["courier.booked"] == {"made": 2, "seen": 2, "duplicates": {}}
    assert totals["workers"]["w2"]["crashes"] == 1


def test_every_picture_export_and_page_carries_the_totals(tmp_path: Path) -> None:
    import networkx as nx

    run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
    line = "start requests: 1 (2 calls: 1 created a target, 1 returned an existing target)"
    paths = export(run, tmp_path, ["svg", "dot", "mermaid", "graphml", "json", "html", "review"],
                   stem="run")  # fmt: skip
    for format in ("dot", "html", "review"):
        assert line in paths[format].read_text("utf-8"), format
    # The picture's totals are wrapped to the graph's width.
    assert "returned an existing target" in paths["svg"].read_text("utf-8")
    assert line.replace(":", "#58;").replace("(", "#40;").replace(")", "#41;") in (
        paths["mermaid"].read_text("utf-8")
    )
    graphml = nx.read_graphml(paths["graphml"], force_multigraph=True)
    assert json.loads(graphml.graph["totals"]) == run.totals().to_json()
    assert json.loads(paths["json"].read_text("utf-8"))["graph"]["totals"] == run.totals().to_json()
    from yieldstar_sim.views import draw_run

    texts = [text.get_text() for axes in draw_run(run).axes for text in axes.texts]
    (said,) = [text for text in texts if text.startswith("totals\n")]
    assert line in " ".join(said.split())
