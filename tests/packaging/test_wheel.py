"""Installed from its wheel, the package stands alone: no source tree, no editable install.

``python -m build`` makes the sdist and, from it, the wheel; the wheel goes into a fresh virtual
environment (its dependencies from pip's cache or the configured index), and a user's first
steps run from an unrelated directory: ``yieldstar-sim list``, ``yieldstar-sim run
durable-start``, and the first code cells of notebooks/01.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

#: The notebook's opening: imports, loading a bundled scenario, a run, its picture.
NOTEBOOK_CELLS = 4


def _run(args: list[str | Path], cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _clean_env(home: Path) -> dict[str, str]:
    # Nothing of the source tree may leak in: no PYTHONPATH, and the scenarios come from the
    # installed package, not from an override.
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "YIELDSTAR_SCENARIOS", "VIRTUAL_ENV", "PYTHONHOME"}
    }
    env.update(MPLBACKEND="Agg", HOME=str(home), MPLCONFIGDIR=str(home / "mpl"))
    return env


def _notebook_opening() -> str:
    notebook = json.loads((ROOT / "notebooks" / "01_shop_story.ipynb").read_text("utf-8"))
    cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    return "\n\n".join("".join(cell["source"]) for cell in cells[:NOTEBOOK_CELLS])


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh virtual environment with the wheel installed, and an environment to run it in."""
    base = tmp_path_factory.mktemp("wheel")
    env = _clean_env(base)
    dist = base / "dist"
    _run([sys.executable, "-m", "build", "--outdir", dist, ROOT], cwd=base, env=env)
    wheels = sorted(dist.glob("yieldstar_sim-*.whl"))
    assert len(wheels) == 1, sorted(dist.iterdir())
    assert sorted(dist.glob("yieldstar_sim-*.tar.gz")), "no sdist was built"
    environment = base / "venv"
    venv.create(environment, with_pip=False)
    # The test suite's own pip installs into it (--python): quicker than bootstrapping one, and
    # --no-compile skips byte-compiling the dependencies, the larger part of an install.
    pip = [sys.executable, "-m", "pip", "--python", environment / "bin" / "python"]
    _run([*pip, "install", "--quiet", "--no-compile", wheels[0]], cwd=base, env=env)
    return environment, env


def test_the_installed_package_is_the_wheels_not_the_source_tree(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    environment, env = installed
    probe = (
        "import yieldstar_sim, yieldstar_sim.scenarios as s, pathlib; "
        "print(yieldstar_sim.__file__); print(pathlib.Path(s.__file__).parent)"
    )
    package, scenarios = _run(
        [environment / "bin" / "python", "-c", probe], cwd=tmp_path, env=env
    ).split()
    for path in (Path(package), Path(scenarios)):
        assert path.is_relative_to(environment), path
        assert not path.is_relative_to(ROOT), path


def test_the_cli_lists_and_runs_the_bundled_scenarios(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    environment, env = installed
    cli = environment / "bin" / "yieldstar-sim"
    listed = _run([cli, "list"], cwd=tmp_path, env=env)
    bundled = {path.stem.replace("_", "-") for path in (ROOT / "scenarios").glob("[!_]*.py")}
    assert bundled <= set(listed.split()), listed
    out = tmp_path / "out"
    _run([cli, "run", "durable-start", "--out", out], cwd=tmp_path, env=env)
    assert sorted(path.suffix for path in out.iterdir()), "the run wrote no files"


def test_the_first_cells_of_the_shop_story_notebook_run(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    environment, env = installed
    script = tmp_path / "opening.py"
    script.write_text(_notebook_opening(), "utf-8")
    printed = _run([environment / "bin" / "python", script], cwd=tmp_path, env=env)
    assert "couriers booked: 2" in printed, printed
