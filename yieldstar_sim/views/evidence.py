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
>>> ship = graph.edges["order-42", "@ship-order:order-42/ship", "ship"]
>>> graph.nodes["order-42"]["fault_kinds"], ship["calls"]
('crash', 2)
>>> edge_label("ship", ship)
'ship\\n2 start calls, one target'
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from yieldstar_sim.engine.world import TRIGGERED
from yieldstar_sim.simulation.trace_payloads import (
    BodyData,
    EffectData,
    FaultData,
    StartChildData,
    StartData,
    TraceKind,
)
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


def violation_names(violation: Violation) -> set[str]:
    """Every word a violation names in its data or its sentence (execution IDs among them)."""
    named: set[str] = set()
    _named(violation.data, named)
    named.update(word.rstrip(".") for word in _WORDS.findall(violation.message))
    return named


def violation_events(violations: Sequence[Violation], events: Sequence[TraceEvent]) -> list[int]:
    """Where in the trace each violation came true, as an event's sequence number: the event
    its data names (``event``), else the last effect it names made by an execution it names
    (the second courier), else, of the executions it names, the admission of the one admitted
    last (the second admission of one step) or, when it names one, that one's last event (how
    it ended), else the trace's last event."""
    first: dict[str, int] = {}  # each execution's admission (or first event)
    final: dict[str, int] = {}  # each execution's last event
    effects: dict[tuple[str, str], int] = {}  # the last effect of each name, per execution
    for event in events:
        data = event.data
        admitted = None
        if isinstance(data, StartData | StartChildData):
            admitted = data.accepted
        elif isinstance(data, EffectData) and data.name == TRIGGERED:
            admitted = str(data.data.get("execution_id"))
        for who in (admitted, event.execution_id):
            if who is not None:
                first.setdefault(who, event.seq)
        if event.execution_id is not None:
            final[event.execution_id] = event.seq
            if isinstance(data, EffectData):
                effects[(data.name, event.execution_id)] = event.seq
    last = events[-1].seq if events else 0
    found = []
    for violation in violations:
        said = violation.data.get("event")
        if isinstance(said, int | str) and str(said).isdigit():
            found.append(int(said))
            continue
        names = violation_names(violation)
        made = [seq for (name, who), seq in effects.items() if name in names and who in names]
        named = [name for name in names if name in first]
        if made:
            found.append(max(made))
        elif len(named) == 1:
            found.append(final.get(named[0], first[named[0]]))
        else:
            found.append(max((first[name] for name in named), default=last))
    return found


def mark_violations(graph: nx.MultiDiGraph, violations: Sequence[Violation]) -> None:
    """Set ``violation`` on the nodes that a violation names, in its data or its sentence, and
    ``violations``: which, by their numbers from 1 in the run's order ("1, 2"), as the caption
    and the review page number the sentences."""
    numbers: dict[str, list[int]] = {}
    for number, violation in enumerate(violations, start=1):
        for name in violation_names(violation):
            numbers.setdefault(name, []).append(number)
    for node, data in graph.nodes(data=True):
        found = numbers.get(str(node), [])
        data["violation"] = bool(data.get("violation")) or bool(found)
        if found:
            data["violations"] = ", ".join(map(str, found))
            # Which invariants, for a family's shape: a thousand orders each named by its own
            # at_most_once sentence are alike.
            data["invariants"] = "\n".join(sorted({violations[n - 1].invariant for n in found}))


#: The key and the label of the edge from a run that continued as new to the run of its
#: instance that it admitted (edge kind ``continued``). A step key has no space, so no step's
#: edge shares it.
CONTINUED_AS = "continued as"


def edge_line(data: Mapping[str, Any]) -> str:
    """How an edge is drawn, in words every renderer maps to its own line: ``trigger`` (a
    non-durable trigger), ``joined`` (a run the step joined, not owned), ``continued`` (a run
    that continued as new, to its instance's next run), ``detached`` (a detached start or
    spawn) or ``owned`` (a parent link)."""
    kind = data.get("kind")
    if kind in {"trigger", "joined", "continued"}:
        return str(kind)
    return "detached" if data.get("detached") else "owned"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


#: How many violations' numbers a node names before it counts the rest.
NUMBERS_NAMED = 3


def evidence_text(data: Mapping[str, Any]) -> str:
    """A node's evidence in words (empty when there is none): ``fault: crash · 1 retry``."""
    parts = []
    if data.get("faults"):
        kinds = str(data.get("fault_kinds") or "")
        parts.append(f"{'faults' if data['faults'] > 1 else 'fault'}: {kinds}")
    if data.get("retries"):
        parts.append(_plural(int(data["retries"]), "retry").replace("retrys", "retries"))
    if data.get("violation"):
        # Which sentences name it, by their numbers in the caption and on the review page.
        numbers = [part for part in str(data.get("violations") or "").split(", ") if part]
        if not numbers:
            parts.append("named by a violation")
        elif len(numbers) <= NUMBERS_NAMED:
            parts.append(
                f"named by violation{'s' if len(numbers) > 1 else ''} {', '.join(numbers)}"
            )
        else:  # on two lines, to stay about as wide as a box
            more = len(numbers) - NUMBERS_NAMED
            first = ", ".join(numbers[:NUMBERS_NAMED])
            parts.append(f"named by {len(numbers)} violations:\n{first} and {more} more")
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
        # The members as ranges that hold none drawn elsewhere (views.families.span_words),
        # a range or a name a line, to stay about as wide as a box.
        span = str(data.get("span") or f"{members[0]} \u2026 {members[-1]}")
        lines += [status, *_packed([shown(part) for part in span.split(", ")], SPAN_LINE)]
    else:
        workflow = shown(str(data.get("workflow_id", "?")))
        lines = [shown(str(node)), f"{workflow} · {data.get('status', '?')}"]
    # One line per kind of evidence: a box stays about as wide as its ID.
    said = evidence_text(data)
    return "\n".join([*lines, *said.split(" · ")] if said else lines)


#: Characters of a family's members in words on one line of its box: two boxes side by side
#: are a slot apart, and a longer line printed over its neighbour.
SPAN_LINE = 22


def _packed(parts: list[str], width: int) -> list[str]:
    """``parts`` joined by ", " into lines of at most ``width`` characters (a part longer than
    that is a line of its own; "and N more" goes on a line of its own when it must)."""
    lines: list[str] = []
    split = []
    for part in parts:
        name, found, more = part.partition(" and ")
        split += [name, f"and {more}"] if found and len(part) > width else [part]
    for part in split:
        if part.startswith("and ") and lines and len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += f" {part}"
        elif part.startswith("and "):
            lines.append(part)
        elif lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += f", {part}"
        else:
            if lines:
                lines[-1] += ","
            lines.append(part)
    return lines


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
