"""The scenario notebooks run top to bottom, headless, in a fresh kernel, each in under 60 s.

Jupyter and IPython keep their state (config, kernel connection files, history) in a folder
of this test session, never in the user's home. Notebooks are stored without outputs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.notebooks

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
#: What the issue promises for each notebook on these machines.
BUDGET_SECONDS = 60.0
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module", autouse=True)
def jupyter_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point every Jupyter and IPython folder at this session's temporary folder."""
    root = tmp_path_factory.mktemp("jupyter")
    settings = {
        "JUPYTER_CONFIG_DIR": str(root / "config"),
        "JUPYTER_DATA_DIR": str(root / "data"),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        "IPYTHONDIR": str(root / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",  # jupyter_core's own future default, and no warning
        "MPLBACKEND": "Agg",
    }
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield root
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def test_there_are_notebooks() -> None:
    names = {path.stem for path in PATHS}
    assert {"01_shop_story", "02_frozen_leases", "03_mismatch_and_invalid_params",
            "04_explore_shrink_replay_sql", "stepper_demo"} <= names  # fmt: skip


@pytest.mark.parametrize("path", PATHS, ids=[path.stem for path in PATHS])
def test_notebooks_are_stored_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: strip outputs (scripts/strip_notebooks.py)"
            assert cell.execution_count is None, f"{path.name}: strip execution counts"


def _strip_script() -> object:
    script = NOTEBOOKS.parent / "scripts" / "strip_notebooks.py"
    spec = importlib.util.spec_from_file_location("strip_notebooks", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", PATHS, ids=[path.stem for path in PATHS])
def test_notebooks_are_stored_stripped_of_volatile_metadata(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert _strip_script().stripped(text) == text, (  # type: ignore[attr-defined]
        f"{path.name}: run .venv/bin/python scripts/strip_notebooks.py {path.name}"
    )


def test_stripping_undoes_what_saving_in_jupyterlab_adds(tmp_path: Path) -> None:
    """JupyterLab writes language_info details, widget state and cell timings on save."""
    original = PATHS[0].read_text(encoding="utf-8")
    saved = json.loads(original)
    saved["metadata"]["language_info"].update(
        {"version": "3.11.2", "mimetype": "text/x-python", "pygments_lexer": "ipython3"}
    )
    saved["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    code = next(cell for cell in saved["cells"] if cell["cell_type"] == "code")
    code["metadata"]["execution"] = {"iopub.status.busy": "2025-01-01T00:00:00Z"}
    code["execution_count"] = 3
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
    dirty = tmp_path / PATHS[0].name
    dirty.write_text(json.dumps(saved, indent=1), encoding="utf-8")
    script = _strip_script()
    assert script.main(["--check", str(dirty)]) == 1  # type: ignore[attr-defined]
    assert script.main([str(dirty)]) == 0  # type: ignore[attr-defined]
    assert dirty.read_text(encoding="utf-8") == original
    assert script.main(["--check", str(dirty)]) == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", PATHS, ids=[path.stem for path in PATHS])
def test_the_notebook_runs_headless(path: Path, jupyter_state: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=BUDGET_SECONDS,  # per cell
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    started = time.perf_counter()
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on an error
    elapsed = time.perf_counter() - started
    assert elapsed < BUDGET_SECONDS, f"{path.name} took {elapsed:.0f} s"
    outputs = [output for cell in notebook.cells if cell.cell_type == "code"
               for output in cell.outputs]  # fmt: skip
    assert not [o for o in outputs if o.output_type == "error"]
    kinds = {kind for output in outputs for kind in output.get("data", {})}
    if "Stepper(" in "".join(cell.source for cell in notebook.cells):
        assert WIDGET in kinds, f"{path.name}: the stepper did not display as a widget"
    if "progress=True" in "".join(cell.source for cell in notebook.cells):
        bars = [o for o in outputs if o.output_type == "display_data" and WIDGET in o.data]
        assert bars, f"{path.name}: the explorer's progress bar is not a widget"
    assert not list(jupyter_state.glob("runtime/kernel-*.json")), "a kernel was left running"
