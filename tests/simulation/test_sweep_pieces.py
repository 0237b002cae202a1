"""How a systematic search in several processes hands out its sweeps.

A sweep is a parent run and every branch of one fault kind along it: at 100 orders about 800
runs, at 1,000 ten times more of ten times the moves. A task's answer comes back whole, so
handing a process a whole sweep made a violation, a budget or a stop wait for it. Sweeps are
cut into pieces of about ``MOST_MOVES`` moves, and the answers come back numbered as the whole
sweep's branches.
"""

from __future__ import annotations

import concurrent.futures
import os
import random
from pathlib import Path
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.simulation.explorer.runs import Sweep
from yieldstar_sim.simulation.explorer.shards import MOST_MOVES, Runner, pieces
from yieldstar_sim.simulation.faults import FaultKind
from yieldstar_sim.simulation.moves import Move, plain_move


def _sweep(length: int, points: list[int], kind: str = "crash") -> Sweep:
    parent = tuple(plain_move(f"w{i % 3}") for i in range(length))
    branches = tuple((at, Move(f"w{at % 3}", FaultKind(kind))) for at in points)
    return Sweep(parent, branches, tuple(f"{kind}@{at}" for at in points), kind, expand=False)


def _sweeps(seed: int) -> list[Sweep]:
    rng = random.Random(seed)
    found = []
    for kind in ("crash", "freeze", "lose_response"):
        length = rng.choice([3, 40, 900, 9_000])
        points = sorted(rng.sample(range(length), rng.randint(0, min(length, 700))))
        found.append(_sweep(length, points, kind))
    return found


def _cost(task: list[tuple[Sweep, int, Sweep]]) -> int:
    """The moves a task takes: each piece walks its parent to its last branch, and each of its
    branches runs the parent's moves after its point."""
    return sum(
        piece.branches[-1][0] + sum(len(piece.parent) - at for at, _ in piece.branches)
        for _, _, piece in task
    )


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("jobs", [2, 3, 8])
def test_the_pieces_hold_every_branch_once_in_order_numbered_as_in_its_sweep(
    seed: int, jobs: int
) -> None:
    sweeps = _sweeps(seed)
    tasks = pieces(sweeps, jobs)
    assert all(tasks), "no task is empty"
    handed: dict[int, list[tuple[tuple[int, Move], str]]] = {id(one): [] for one in sweeps}
    for task in tasks:
        for one, first, piece in task:
            assert piece.branches, "no piece is empty"
            assert (piece.parent, piece.kind, piece.expand) == (one.parent, one.kind, one.expand)
            end = first + len(piece.branches)
            assert piece.branches == one.branches[first:end]
            assert piece.labels == one.labels[first:end]
            assert len(handed[id(one)]) == first, "pieces come in the sweep's order"
            handed[id(one)] += zip(piece.branches, piece.labels, strict=True)
    for one in sweeps:
        assert handed[id(one)] == list(zip(one.branches, one.labels, strict=True))


@pytest.mark.parametrize("seed", range(12))
def test_a_task_takes_about_most_moves_at_most_and_each_process_gets_four(seed: int) -> None:
    sweeps = _sweeps(seed)
    tasks = pieces(sweeps, 2)
    for task in tasks:
        # One branch alone may cost more (a piece's walk to it, then the run after it).
        singles = len(task) == 1 and len(task[0][2].branches) == 1
        assert singles or _cost(task) <= MOST_MOVES
    total = sum(len(one.branches) for one in sweeps)
    if total >= 8 and sum(map(_cost, tasks)) >= 8 * MOST_MOVES:
        assert len(tasks) >= 8


def test_a_sweep_at_a_thousand_orders_is_cut_into_tasks_of_a_branch_or_two() -> None:
    # 9,000 moves, a crash at each of 800 points: whole, a task was 800 runs.
    one = _sweep(9_000, list(range(0, 8_000, 10)))
    tasks = pieces([one], 2)
    assert max(sum(len(piece.branches) for _, _, piece in task) for task in tasks) <= 8
    assert len(tasks) >= 100


def test_small_sweeps_share_a_task() -> None:
    sweeps = [_sweep(30, [1, 5, 9], kind) for kind in ("crash", "freeze", "lose_response")]
    tasks = pieces(sweeps, 1)
    assert any(len({id(one) for one, _, _ in task}) > 1 for task in tasks)


class InlinePool(concurrent.futures.Executor):
    """Answers each task when it is handed over: each piece's branches as their labels (what
    ``Runner`` yields is the pool's answer, untouched)."""

    def __init__(self) -> None:
        self.branches = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        handed: list[Sweep] = args[-1]
        self.branches += sum(len(piece.branches) for piece in handed)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result([[[label] for label in piece.labels] for piece in handed])
        return future


def test_a_search_that_stops_at_its_first_answer_has_handed_out_a_few_tasks_only() -> None:
    sweeps = [_sweep(900, list(range(800)), kind) for kind in ("crash", "freeze")]
    pool = InlinePool()
    runner = Runner(ys.load_scenario("durable-start"), "memory", jobs=2, executor=pool)
    answers = runner.sweeps(sweeps)
    one, number, outcomes = next(answers)
    assert (one, number, list[Any](outcomes)) == (sweeps[0], 0, [sweeps[0].labels[0]])
    del answers  # the caller stops asking
    # The window is twice the processes' tasks ahead, each task about MOST_MOVES moves: where
    # a whole sweep was 800 runs, the window's tasks are fewer than a tenth of it.
    assert pool.branches < 80


def test_each_answer_is_numbered_as_its_branch_in_the_whole_sweep() -> None:
    sweeps = _sweeps(3)
    runner = Runner(ys.load_scenario("durable-start"), "memory", jobs=3, executor=InlinePool())
    got = [
        (id(one), number, list[Any](outcomes)) for one, number, outcomes in runner.sweeps(sweeps)
    ]
    assert got == [
        (id(one), number, [label]) for one in sweeps for number, label in enumerate(one.labels)
    ]


class ClosingRuntime(ys.MemoryRuntime):
    """A memory runtime that notes, in the folder ``$CLOSING_RUNTIME``, each process's runtimes
    opened and closed."""

    def __init__(self, *, clock: Any) -> None:
        super().__init__(clock=clock)
        self._note("opened")

    def close(self) -> None:
        self._note("closed")
        super().close()

    @staticmethod
    def _note(what: str) -> None:
        folder = Path(os.environ["CLOSING_RUNTIME"])
        with (folder / f"{os.getpid()}.txt").open("a") as notes:
            notes.write(f"{what}\n")


def closing_runtime(*, clock: Any) -> ClosingRuntime:
    """``ClosingRuntime``'s factory, by a name other processes import."""
    return ClosingRuntime(clock=clock)


def test_every_runtime_a_pool_process_opened_is_closed_when_the_pool_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pool's process keeps its run of the scenario for every task it is handed, and ends
    # without running ``atexit``: what it opened is closed as the pool ends it.
    monkeypatch.setenv("CLOSING_RUNTIME", str(tmp_path))
    report = ys.explore(
        ys.load_scenario("durable-start"), max_faults=1, jobs=2, confirm=None, stop_at_first=False,
        runtime=f"{__name__}:closing_runtime",
    )  # fmt: skip
    assert report.schedules_run > 1
    notes = {path.stem: path.read_text().split() for path in tmp_path.glob("*.txt")}
    workers = set(notes) - {str(os.getpid())}
    assert workers, "the sweeps ran in other processes"
    for pid, lines in notes.items():
        assert lines.count("opened") == lines.count("closed") >= 1, (pid, lines)
