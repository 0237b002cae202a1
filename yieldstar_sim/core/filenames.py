"""File names made from user-chosen names (scenario names), safe to join to any folder.

A scenario name is free text: ``"../../x"``, ``"/etc/x"`` or ``"CON"`` must not make the CLI
write outside ``--out``. Every output file name starts from :func:`file_stem`.
"""

from __future__ import annotations

import re

MAX_STEM = 64
"""Long enough to tell scenarios apart, short enough to leave room for suffixes."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Device names Windows reserves in any folder, with any extension.
_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{i}" for p in ("COM", "LPT") for i in range(10)}


def file_stem(name: str) -> str:
    """A file-name stem for ``name``: ASCII letters, digits, ``.``, ``_`` and ``-`` only, no
    leading dot or dash, at most :data:`MAX_STEM` characters; never empty.

    >>> file_stem("durable-start"), file_stem("../../etc/passwd"), file_stem("/")
    ('durable-start', 'etc-passwd', 'scenario')
    """
    stem = _UNSAFE.sub("-", name)[:MAX_STEM].strip(".-")
    stem = re.sub(r"\.{2,}", ".", stem)
    if not stem:
        return "scenario"
    if stem.split(".")[0].upper() in _RESERVED:
        return f"_{stem}"
    return stem
