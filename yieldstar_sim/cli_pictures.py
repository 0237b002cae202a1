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


def _write(report: ExplorationReport, out: Path, formats: Sequence[str]) -> ExplorationPictures:
    from yieldstar_sim.views.exploration import write_exploration_pictures

    return write_exploration_pictures(report, out, formats, scenario=_SCENARIO[0])


class PictureProcess:
    """Draws an exploration's pictures (``write``): with ``fork``, in a forked process that
    imports the picture libraries at once, else (or where there is no ``fork``: Windows)
    here, when asked."""

    def __init__(self, scenario: Scenario, *, fork: bool) -> None:
        self.scenario = scenario
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
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

    def write(
        self, report: ExplorationReport, out: Path, formats: Sequence[str]
    ) -> ExplorationPictures:
        """The report's pictures, written into ``out`` as ``write_exploration_pictures``
        writes them; here when the picture process is gone (it was never started, or died)."""
        if self._pool is not None:
            try:
                return self._pool.submit(_write, report, out, formats).result()
            except (concurrent.futures.process.BrokenProcessPool, pickle.PicklingError):
                # The process died (killed by the system), or the report holds something that
                # does not cross to it: draw here as --jobs 1 does.
                self.close()
        from yieldstar_sim.views.exploration import write_exploration_pictures

        return write_exploration_pictures(report, out, formats, scenario=self.scenario)

    def close(self) -> None:
        """End the picture process, if any."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
