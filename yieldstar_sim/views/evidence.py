"""What a reviewer must see on the graph, in every format: how many start calls a request
took, which executions a fault struck or whose steps were retried, which were admitted twice
by one step, and which a violation names; and the labels that say it, shared by the pictures
(PNG, SVG, the review page) and the text exports (DOT, Mermaid, GraphML, JSON).

The evidence is kept as plain attributes on the graph, so that every exporter carries it:
an edge's ``calls`` and ``duplicate``; a node's ``faults`` (how many faults the fault plan fired
at its calls), ``fault_kinds`` (which, comma-separated), ``retries`` (step attempts past the
first) and ``violation`` (a violation's sentence or data names it).

>>> import yieldstar_sim as ys
>>> run = ys.simulate(ys.load_scenario("durable-start"), runtime="memory")
>>> from yieldstar_sim.views.graph import run_graph
>>> graph = run_graph(run)
>>> ship = graph.edges["order-42", "@ship-order-2", "ship"]
>>> graph.nodes["order-42"]["fault_kinds"], ship["calls"]
('crash', 2)
>>> edge_label("ship", ship)
'ship\\n2 start calls, one target'
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from yieldstar_sim.simulation.trace_payloads import BodyData, FaultData, StartData, TraceKind
from yieldstar_sim.views.drawn_text import shown

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import networkx as nx

    from yieldstar_sim.simulation.invariants.protocol import Violation
    from yieldstar_sim.simulation.trace import TraceEvent

#: The sign between a family's size and its shape: "998 \u00d7 charge-order".
TIMES = "\u00d7"
#: Between a workflow and the workflows it started, in a shape's words.
ARROW = "\u2192"
#: Statuses an execution may have and still be drawn in a family: a failed or pruned one is
#: always drawn on its own.
PLAIN_STATUSES = frozenset({"pending", "running", "suspended", "completed", "cancelled"})

_WORDS = re.compile(r"[^\s,;:()\[\]{}'\"]+")


def mark_trace_evidence(
    graph: nx.MultiDiGraph, trace: Iterable[TraceEvent], upto: int | None = None
) -> None:
    """Set ``faults``, ``fault_kinds`` and ``retries`` on every node of ``graph`` and
    ``calls`` on every start edge, from the trace up to event ``upto`` (inclusive)."""
    kinds: dict[str, list[str]] = {}
    retries: dict[str, int] = {}
    calls: dict[tuple[str, str], int] = {}
    for event in trace:
        if upto is not None and event.seq > upto:
            break
        data = event.data
        who = event.execution_id
        if not who:
            continue
        if event.kind == TraceKind.FAULT and isinstance(data, FaultData):
            kinds.setdefault(who, []).append(data.kind)
        elif isinstance(data, BodyData) and data.attempt > 1:
            retries[who] = retries.get(who, 0) + 1
        elif isinstance(data, StartData) and event.step_key:
            calls[(who, event.step_key)] = calls.get((who, event.step_key), 0) + 1
    for node, data in graph.nodes(data=True):
        struck = kinds.get(str(node), [])
        data["faults"] = len(struck)
        data["fault_kinds"] = ", ".join(dict.fromkeys(struck))
        data["retries"] = retries.get(str(node), 0)
        data.setdefault("violation", False)
    for source, _, data in graph.edges(data=True):
        if data.get("kind") == "start":
            data["calls"] = max(calls.get((str(source), str(data.get("step_key"))), 1), 1)
        else:
            data.setdefault("calls", 1)


def _named(value: object, into: set[str]) -> None:
    """Every string inside ``value`` (a violation's data: strings, lists, mappings)."""
    if isinstance(value, str):
        into.add(value)
    elif isinstance(value, dict):
        for item in value.values():
            _named(item, into)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _named(item, into)


def mark_violations(graph: nx.MultiDiGraph, violations: Sequence[Violation]) -> None:
    """Set ``violation`` on the nodes that a violation names, in its data or its sentence."""
    named: set[str] = set()
    for violation in violations:
        _named(violation.data, named)
        named.update(word.rstrip(".") for word in _WORDS.findall(violation.message))
    for node, data in graph.nodes(data=True):
        data["violation"] = bool(data.get("violation")) or str(node) in named


def notable(data: Mapping[str, Any]) -> bool:
    """Whether an execution (its node's data) must be drawn on its own: struck by a fault,
    retried, or ended badly. (Being named by a violation is part of a family's shape instead:
    ``views.families``.)"""
    return bool(
        data.get("faults") or data.get("retries") or str(data.get("status")) not in PLAIN_STATUSES
    )


def notable_edge(data: Mapping[str, Any]) -> bool:
    """Whether a link must be drawn on its own: not a plain durable start taken in one call."""
    return data.get("kind") != "start" or bool(data.get("duplicate")) or data.get("calls", 1) > 1


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def evidence_text(data: Mapping[str, Any]) -> str:
    """A node's evidence in words (empty when there is none): ``fault: crash · 1 retry``."""
    parts = []
    if data.get("faults"):
        kinds = str(data.get("fault_kinds") or "")
        parts.append(f"{'faults' if data['faults'] > 1 else 'fault'}: {kinds}")
    if data.get("retries"):
        parts.append(_plural(int(data["retries"]), "retry").replace("retrys", "retries"))
    if data.get("violation"):
        parts.append("named by a violation")
    return " · ".join(parts)


def node_label(node: object, data: Mapping[str, Any]) -> str:
    """The text a node shows in every format: its ID (a family: its count and shape), its
    workflow and status, then its evidence; lines separated by ``\\n``. A long name is cut
    (``drawn_text.shown``): the data formats keep it whole beside the label."""
    members = data.get("members")
    if members:
        # A shape on several lines, one workflow a line, to stay about as wide as a box.
        chain, _, status = str(data.get("shape", node)).rpartition(", ")
        first, *rest = chain.split(f" {ARROW} ")
        lines = [f"{data.get('group', len(members))} {TIMES} {shown(first)}"]
        lines += [f"{ARROW} {shown(part)}" for part in rest]
        lines += [status, f"{shown(str(members[0]))} \u2026 {shown(str(members[-1]))}"]
    else:
        workflow = shown(str(data.get("workflow_id", "?")))
        lines = [shown(str(node)), f"{workflow} · {data.get('status', '?')}"]
    # One line per kind of evidence: a box stays about as wide as its ID.
    said = evidence_text(data)
    return "\n".join([*lines, *said.split(" · ")] if said else lines)


def edge_label(key: object, data: Mapping[str, Any]) -> str:
    """The text an edge shows in every format: its step key, then how many start calls its
    request took and whether its step admitted several executions."""
    lines = [shown(str(data.get("step_key", key)))]
    calls = int(data.get("calls", 1) or 1)
    if data.get("duplicate"):
        lines.append("duplicate admission")
    elif calls > 1:
        lines.append(f"{calls} start calls, one target")
    return "\n".join(lines)
