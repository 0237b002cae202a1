"""Strip outputs, execution counts and volatile metadata from notebooks, in place.

Notebooks are stored without outputs and with one fixed set of notebook metadata, so that
opening and saving one in JupyterLab (which adds ``language_info`` details, widget state and
cell timings) leaves no diff once stripped. Run this after saving one from Jupyter::

    .venv/bin/python scripts/strip_notebooks.py notebooks/*.ipynb

``--check`` changes nothing and exits 1 naming each notebook that is not stripped (CI runs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

#: The only notebook metadata kept: the kernel to run and the language (what nbclient and the
#: docs' renderer need), in one fixed form.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python"}
#: Cell metadata that records a session rather than the notebook (timings, view state).
VOLATILE_CELL_METADATA = (
    "execution",
    "collapsed",
    "scrolled",
    "ExecuteTime",
    "jp-MarkdownHeadingCollapsed",
)


def stripped(text: str) -> str:
    """The notebook ``text`` as it is committed: no outputs, fixed metadata."""
    notebook = nbformat.reads(text, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
    notebook.metadata = nbformat.from_dict(
        {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    )
    return nbformat.writes(notebook) + "\n"


def main(argv: list[str]) -> int:
    """Strip (or with ``--check``, check) every notebook named, or all of ``notebooks/``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="notebooks (default: notebooks/*.ipynb)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if unclean")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.paths] or sorted(Path("notebooks").glob("*.ipynb"))
    unclean = []
    for path in paths:
        before = path.read_text(encoding="utf-8")
        after = stripped(before)
        if after == before:
            continue
        unclean.append(path)
        if not args.check:
            path.write_text(after, encoding="utf-8")
            print(f"stripped {path}")
    if args.check and unclean:
        for path in unclean:
            print(f"{path}: not stripped; run .venv/bin/python scripts/strip_notebooks.py {path}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
