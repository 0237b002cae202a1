"""Strip outputs, execution counts and widget state from notebooks, in place.

Notebooks are stored without outputs (a test checks it): run this after saving one from
Jupyter::

    .venv/bin/python scripts/strip_notebooks.py notebooks/*.ipynb
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def strip(path: Path) -> bool:
    """Strip one notebook; True if it changed."""
    before = path.read_text(encoding="utf-8")
    notebook = nbformat.reads(before, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    notebook.metadata.pop("widgets", None)
    after = nbformat.writes(notebook) + "\n"
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def main(paths: list[str]) -> int:
    """Strip every notebook named; print the ones that changed."""
    for name in paths or sorted(str(p) for p in Path("notebooks").glob("*.ipynb")):
        if strip(Path(name)):
            print(f"stripped {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
