"""The explored state space: the distinct states an exhaustive search reached, each named by
its key and recorded the first time it is reached (with a schedule that replays to it), and
the moves between them; plain data, which the views draw and find paths in
(``views.statespace``; its docstring shows one built by hand)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class StateNode:
    """One distinct state: ``depth`` choice points from the start on the first path that
    reached it, at the choice point ``label`` (or the end of the run); ``plan`` is the index of
    a schedule that reaches it; ``terminal`` says a run ended in it, and ``violations`` which
    invariants such a run violated."""

    key: str
    depth: int
    label: str
    plan: int
    terminal: bool = False
    violations: list[str] = field(default_factory=list)

    @property
    def violating(self) -> bool:
        """Whether a run that ended in this state violated an invariant."""
        return bool(self.violations)


@dataclass(frozen=True, slots=True)
class StateEdge:
    """A step from one state to the next: the actor that went (``choice``), and the fault
    injected at that choice point, described as in a fault plan (``None`` for none)."""

    source: str
    target: str
    choice: str
    fault: str | None
    plan: int


@dataclass(slots=True)
class StateSpace:
    """The states and edges a search explored, in the order it found them: the first ``limit``
    (None: every one), for people to look at, with the edges between them; the search counts
    them all (``ExplorationReport.distinct_states``). ``cut_by`` says, a clause each, what
    stopped the search before its end (empty: nothing did): a picture of a cut space must not
    say that no state violates, only that none reached does."""

    root: str | None = None
    nodes: dict[str, StateNode] = field(default_factory=dict)
    edges: dict[tuple[str, str, str, str | None], StateEdge] = field(default_factory=dict)
    limit: int | None = None
    cut_by: list[str] = field(default_factory=list)

    @property
    def full(self) -> bool:
        """Whether the space holds ``limit`` states and takes no more."""
        return self.limit is not None and len(self.nodes) >= self.limit

    def __getstate__(self) -> dict[str, Any]:
        """What crosses to another process: the states and edges as columns of numbers, each
        key, label, actor and fault written once. A search in several processes ships each
        process's graph back; as objects, 18,000 states and 42,000 edges pickled to 4.4 MB
        and took 0.8 s to pickle and unpickle."""
        keys = list(self.nodes)
        index = {key: at for at, key in enumerate(keys)}
        nodes = list(self.nodes.values())
        labels: dict[str, int] = {}
        names: dict[str | None, int] = {}
        edges: list[int] = []
        for edge in self.edges.values():
            edges += (
                index[edge.source], index[edge.target], names.setdefault(edge.choice, len(names)),
                names.setdefault(edge.fault, len(names)), edge.plan,
            )  # fmt: skip
        return {
            "root": self.root, "limit": self.limit, "cut_by": self.cut_by, "keys": keys,
            "depths": [node.depth for node in nodes], "plans": [node.plan for node in nodes],
            "labels": [labels.setdefault(node.label, len(labels)) for node in nodes],
            "label_texts": list(labels), "terminal": bytes(node.terminal for node in nodes),
            "violations": {at: node.violations for at, node in enumerate(nodes) if node.violations},
            "edges": edges, "names": list(names),
        }  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        """The space ``__getstate__`` wrote."""
        self.root, self.limit, self.cut_by = state["root"], state["limit"], state["cut_by"]
        keys, texts, names = state["keys"], state["label_texts"], state["names"]
        self.nodes = {
            key: StateNode(key, depth, texts[label], plan, bool(terminal))
            for key, depth, label, plan, terminal in zip(
                keys, state["depths"], state["labels"], state["plans"], state["terminal"],
                strict=True,
            )
        }  # fmt: skip
        for at, violations in state["violations"].items():
            self.nodes[keys[at]].violations = list(violations)
        self.edges = {}
        found = state["edges"]
        for at in range(0, len(found), 5):
            source, target = keys[found[at]], keys[found[at + 1]]
            choice, fault = names[found[at + 2]], names[found[at + 3]]
            self.edges[(source, target, choice, fault)] = StateEdge(
                source, target, choice, fault, found[at + 4]
            )

    def merge(self, other: StateSpace, shift: int) -> None:
        """Add the states and edges of ``other`` (another process's search of the same tree),
        its plan numbers moved up by ``shift``, by the rules a search adds its own by: a state
        both reached keeps the first's record, ending and violations joined."""
        for key, node in other.nodes.items():
            plan = node.plan + shift
            self.add_state(
                key, depth=node.depth, label=node.label, plan=plan, terminal=node.terminal
            )
            for invariant in node.violations:
                self.mark_violation(key, invariant)
        for edge in other.edges.values():
            plan = edge.plan + shift
            self.add_edge(edge.source, edge.target, choice=edge.choice, fault=edge.fault, plan=plan)

    def add_state(
        self, key: str, *, depth: int, label: str, plan: int, terminal: bool = False
    ) -> bool:
        """Record a state; returns whether it is new (and kept: a ``full`` space keeps no
        more). The first state recorded is the root."""
        node = self.nodes.get(key)
        if node is not None:
            node.terminal = node.terminal or terminal
            return False
        if self.full:
            return False
        self.nodes[key] = StateNode(key, depth, label, plan, terminal)
        if self.root is None:
            self.root = key
        return True

    def add_edge(
        self, source: str, target: str, *, choice: str, fault: str | None, plan: int
    ) -> None:
        """Record an edge (once per source, target, choice and fault) between two states
        kept."""
        kept, reached = self.nodes.get(source), self.nodes.get(target)
        if kept is None or reached is None:
            return
        # The nodes' own key strings: a search makes a new string each time it reads a key,
        # and three edges a state each holding two of their own doubled the graph's size.
        edge_key = (kept.key, reached.key, choice, fault)
        if edge_key not in self.edges:
            self.edges[edge_key] = StateEdge(kept.key, reached.key, choice, fault, plan)

    def mark_violation(self, key: str, invariant: str) -> None:
        """Say that a run ending in state ``key`` violated ``invariant`` (when it is kept)."""
        node = self.nodes.get(key)
        if node is not None and invariant not in node.violations:
            node.violations.append(invariant)

    def mark_terminal(self, key: str) -> None:
        """Say that a run ended in state ``key`` (when it is kept)."""
        node = self.nodes.get(key)
        if node is not None:
            node.terminal = True

    def violating(self) -> list[StateNode]:
        """The states where a run ended with a violation, in the order found."""
        return [node for node in self.nodes.values() if node.violating]

    def __len__(self) -> int:
        return len(self.nodes)
