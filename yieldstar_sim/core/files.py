"""Every file the toolkit writes is written whole or not at all: artifacts, pictures, traces,
review pages, exports.

A file written in place is empty, then partial, until its last byte: a disk that fills, or a
Ctrl-C or SIGTERM that arrives meanwhile, left an empty ``...replay.json`` behind, which then
failed to replay as "corrupt JSON". ``write_whole`` writes beside the target, under a hidden
temporary name in the same folder (so on the same file system), and renames it over the target
only once every byte is written: ``os.replace`` is atomic, so a reader sees the old file or the
new one, never a part. Anything that stops the write removes the temporary file and leaves the
target as it was. Only a kill that gives Python no chance to clean up (``SIGKILL``, power loss)
can leave a temporary file, named ``.NAME.*.part``, never a partial ``NAME``.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = write_whole(Path(folder) / "a.json", '{"ok": true}\\n')
...     path.read_text(), sorted(p.name for p in Path(folder).iterdir())
('{"ok": true}\\n', ['a.json'])
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path

#: Permissions of a new file, before the umask: what ``open(path, "w")`` gives.
_MODE = 0o666

_names = itertools.count()


def write_whole(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` (text is written as UTF-8) to ``path`` whole, or not at all; returns the
    path. An error (a full disk, a signal's ``KeyboardInterrupt``) is raised as it came, with
    ``path`` as it was before: the old file, or none."""
    target = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    temporary, descriptor = _temporary(target)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(raw)
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            # Named by the file it could not finish (a full disk, a folder in its place): the
            # target, not the temporary file nobody sees.
            raise OSError(error.errno, error.strerror, str(target)) from None
        raise
    return target


def _temporary(target: Path) -> tuple[Path, int]:
    """A new hidden file beside ``target``, opened for writing: its path and descriptor."""
    while True:
        name = target.with_name(f".{target.name}.{os.getpid()}.{next(_names)}.part")
        try:
            return name, os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _MODE)
        except FileExistsError:  # left by a process of this pid that was killed: another name
            continue
