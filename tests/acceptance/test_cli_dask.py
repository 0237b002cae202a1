"""``explore --dask``: one exhaustive search on a Dask cluster from the command line, a local one
of N processes (``local:N``) or a scheduler's address. A mistake in the address, an
unreachable scheduler, or ``--dask`` with ``--jobs`` is a usage error (exit 2) that says what to
give, never a search. Needs the ``dask`` extra; skipped without it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from yieldstar_sim.cli import main

pytest.importorskip("distributed")

CLI = [sys.executable, "-m", "yieldstar_sim.cli"]

Here = Callable[..., tuple[int, str, str]]


@pytest.fixture
def here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Here:
    """The command in this process, in tmp_path: (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)

    def call(*args: str) -> tuple[int, str, str]:
        try:
            code = main(list(args))
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 2
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return call


def test_explore_dask_local_searches_on_a_local_cluster_and_says_so(tmp_path: Path) -> None:
    result = subprocess.run(
        [*CLI, "explore", "booking-race-fixed", "--strategy", "exhaustive", "--max-faults", "1",
         "--dask", "local:2", "--no-confirm", "--json", "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "ok"
    assert report["coverage"].startswith("verified: ")
    assert "searched by 2 Dask workers sharing their states" in report["coverage"]
    completeness = report["completeness"]
    assert completeness["progress"]["cluster"] == "Dask workers"
    assert completeness["lost"] == []


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("local:0", "local:N, N worker processes (N >= 1), not 'local:0'"),
        ("local:two", "local:N, N worker processes (N >= 1), not 'local:two'"),
        ("tcp://127.0.0.1:9", "cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'"),
    ],
)
def test_a_dask_address_that_names_no_cluster_is_a_usage_error(
    here: Here, address: str, said: str
) -> None:
    code, out, err = here("explore", "durable-start", "--strategy", "exhaustive", "--dask", address)
    assert code == 2
    assert "--dask: " in err
    assert said in err
    assert "verified" not in out


def test_dask_and_jobs_together_are_a_usage_error(here: Here) -> None:
    code, _, err = here("explore", "durable-start", "--dask", "local:2", "--jobs", "2")
    assert code == 2
    assert "--jobs and --dask both say where the search runs: give one" in err


def test_a_port_that_never_answers_as_dask_is_a_usage_error_not_a_hang(
    here: Here, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As the dashboard's port does: it accepts the connection and waits for an HTTP request,
    # and distributed.Client waits for its handshake's answer with no deadline.
    import socket

    from yieldstar_sim.simulation import cluster

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1.0)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        code, out, err = here(
            "explore", "durable-start", "--strategy", "exhaustive", "--dask",
            f"tcp://127.0.0.1:{port}",
        )  # fmt: skip
    assert code == 2
    assert "did not answer as a Dask scheduler" in err
    assert "not the dashboard's (8787)" in err
    assert "verified" not in out


def test_a_scheduler_with_no_workers_is_a_usage_error_not_a_wait(
    here: Here, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default strategy would wait for a worker to run its schedules, forever.
    import logging

    import distributed

    from yieldstar_sim.simulation import cluster

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1.0)
    with distributed.LocalCluster(
        n_workers=0,
        processes=False,
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.CRITICAL,
    ) as empty:  # a scheduler alone
        code, out, err = here("explore", "durable-start", "--dask", empty.scheduler_address)
    assert code == 2
    assert f"the Dask scheduler at '{empty.scheduler_address}' has no workers" in err
    assert "start some with `dask worker " in err
    assert "ok" not in out
