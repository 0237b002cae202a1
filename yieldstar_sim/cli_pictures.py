"""The pictures of ``yieldstar-sim explore --jobs N`` (N > 1), drawn in a process of their own.

Importing matplotlib costs the command about half a second and drawing the grid a fifth, all
in the parent after the search, while the worker processes stand idle: with two CPUs that
serial tail held ``--jobs 2`` far under twice the speed of ``--jobs 1``. A picture process,
forked once the scenario is loaded, imports the picture libraries while the workers search,
and draws from the finished report: the same code on the same report, so the same files, byte
for byte. With ``--jobs 1`` the command stays one process and draws in it.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle
import signal
from typing import TYPE_CHECKING

from yieldstar_sim.core import interrupts

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from yieldstar_sim.simulation.explorer import ExplorationReport
    from yieldstar_sim.simulation.scenario import Scenario
    from yieldstar_sim.views.exploration import ExplorationPictures

#: The explored scenario in the picture process (handed over by the fork, never pickled: a
#: scenario file's workflows need not pickle); violations are replayed with it to draw them.
_SCENARIO: list[Scenario] = []


def _start(scenario: Scenario) -> None:
    # Ctrl-C is the parent's to handle (it keeps what the search found and still draws it);
    # the picture process goes when the parent closes it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _SCENARIO.append(scenario)


def _import_pictures() -> None:
    """Import what drawing and encoding the pictures needs, ahead of the report."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401

    import yieldstar_sim.views.exploration
    import yieldstar_sim.views.export  # noqa: F401


def _write(report: bytes, out: Path, formats: Sequence[str]) -> ExplorationPictures:
    from yieldstar_sim.views.export import write_exploration_pictures

    return write_exploration_pictures(pickle.loads(report), out, formats, scenario=_SCENARIO[0])


def _pickled(report: ExplorationReport) -> bytes | None:
    """The report as it crosses to the picture process, or None when something in it does not
    pickle (a runtime factory of the API's, say): then it is drawn here."""
    try:
        return pickle.dumps(report)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None


class PictureProcess:
    """Draws an exploration's pictures (``write``): with ``fork``, in a forked process that
    imports the picture libraries at once, else (or where there is no ``fork``: Windows)
    here, when asked."""

    def __init__(self, scenario: Scenario, *, fork: bool) -> None:
        self.scenario = scenario
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._early: (
            tuple[str, Path, tuple[str, ...], concurrent.futures.Future[ExplorationPictures]] | None
        ) = None
        if not fork or "fork" not in multiprocessing.get_all_start_methods():
            return
        from yieldstar_sim.engine.worker import frozen_heap

        self._pool = concurrent.futures.ProcessPoolExecutor(
            1,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_start,
            initargs=(scenario,),
        )
        with frozen_heap():  # the first task forks the process (see engine.worker)
            self._pool.submit(_import_pictures)

    def start(self, report: ExplorationReport, out: Path, formats: Sequence[str]) -> None:
        """Start drawing ``report`` as it is now (the search over, before its confirmation on
        another runtime, which runs meanwhile): the pictures depend on the confirmation only
        through the verdict, so ``write`` keeps them when the verdict has not changed."""
        if self._pool is None or self._ended():
            return
        # Pickled now, not when the pool's feeder thread gets to it: the confirmation goes on
        # writing into the report.
        data = _pickled(report)
        if data is None:
            return  # ``write`` draws it, here
        try:
            drawing = self._pool.submit(_write, data, out, tuple(formats))
        except concurrent.futures.process.BrokenProcessPool:
            return
        self._early = (report.verdict, out, tuple(formats), drawing)

    def write(
        self, report: ExplorationReport, out: Path, formats: Sequence[str]
    ) -> ExplorationPictures:
        """The report's pictures, written into ``out`` as ``write_exploration_pictures``
        writes them (those ``start`` drew, when nothing they show has changed since); here when
        the picture process is gone (it was never started, or died)."""
        early, self._early = self._early, None
        if self._ended():
            self.close()
        try:
            if early is not None:
                verdict, where, chosen, drawing = early
                pictures = drawing.result()
                if (verdict, where, chosen) == (report.verdict, out, tuple(formats)):
                    return pictures
            data = _pickled(report)
            if self._pool is not None and data is not None:
                return self._pool.submit(_write, data, out, formats).result()
        except concurrent.futures.process.BrokenProcessPool:
            self.close()  # the process died (killed by the system): draw here, as --jobs 1 does
        from yieldstar_sim.views.export import write_exploration_pictures

        return write_exploration_pictures(report, out, formats, scenario=self.scenario)

    def _ended(self) -> bool:
        """Whether SIGTERM ended the picture process with the command's other children. Its
        pool's thread may be failing it at this very moment, and a task handed to the pool then
        can break that thread (a traceback of Python's, or a hang): draw here instead."""
        return self._pool is not None and interrupts.stop_requested() == signal.SIGTERM

    def close(self) -> None:
        """End the picture process, if any."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
