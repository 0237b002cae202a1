"""Every file the toolkit writes is written whole or not at all: a full disk or a signal in the
middle of a write leaves the file as it was (or absent), never empty or cut short."""

from __future__ import annotations

import ast
import errno
import io
from pathlib import Path
from typing import Any

import pytest

import yieldstar_sim as ys
from yieldstar_sim.core import files
from yieldstar_sim.core.files import write_whole

PACKAGE = Path(ys.__file__).parent


class _Breaks(io.BytesIO):
    """A file whose write takes half the bytes, then fails as ``error`` says."""

    def __init__(self, path: Path, error: BaseException) -> None:
        super().__init__()
        self.path, self.error = path, error

    def write(self, data: Any) -> int:
        self.path.write_bytes(bytes(data[: len(data) // 2]))  # what a full disk leaves
        raise self.error


@pytest.mark.parametrize(
    "error",
    [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()],
    ids=["disk full", "Ctrl-C"],
)
@pytest.mark.parametrize("before", [None, b"the old artifact\n"], ids=["new", "replaced"])
def test_a_write_that_fails_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException, before: bytes | None
) -> None:
    target = tmp_path / "found.replay.json"
    if before is not None:
        target.write_bytes(before)
    real = files.os.fdopen

    def breaking(descriptor: int, mode: str) -> _Breaks:
        real(descriptor, mode).close()
        (temporary,) = tmp_path.glob(".found.replay.json.*.part")
        return _Breaks(temporary, error)

    monkeypatch.setattr(files.os, "fdopen", breaking)
    with pytest.raises(type(error)) as raised:
        write_whole(target, "{}" * 1000)
    if isinstance(error, OSError):
        assert raised.value.filename == str(target)  # the file it could not finish
    assert [path.name for path in tmp_path.iterdir()] == ([] if before is None else [target.name])
    if before is not None:
        assert target.read_bytes() == before


def test_a_written_file_has_a_plain_files_permissions(tmp_path: Path) -> None:
    import os

    umask = os.umask(0o022)
    os.umask(umask)
    path = write_whole(tmp_path / "a.svg", b"<svg/>")
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_no_module_writes_a_file_but_through_write_whole() -> None:
    """``write_text``, ``write_bytes``, ``open(..., "w")`` or ``savefig(path)`` elsewhere would
    write a file in place again, empty until its last byte."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "files.py" and path.parent.name == "core":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if name in {"write_text", "write_bytes"}:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {name}")
            if name == "savefig" and not (
                node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "buffer"
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} savefig")
            modes = [a for a in node.args[1:2] if isinstance(a, ast.Constant)]
            opened = isinstance(node.func, ast.Name) and node.func.id == "open"
            if opened and any(set(str(m.value)) & set("wax") for m in modes):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} open")
    assert found == [f"cli.py:{_devnull_line()} open"]


def _devnull_line() -> int:
    """The one ``open(..., "w")``: stdout replaced by ``os.devnull`` when the reader left."""
    text = (PACKAGE / "cli.py").read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(text, 1) if "open(os.devnull" in line)
