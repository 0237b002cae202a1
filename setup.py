"""Packaging that pyproject.toml cannot say alone: the bundled scenarios ship in the wheel.

The scenarios stay in the top-level ``scenarios/`` folder, where users read and copy them; the
wheel installs them as the package ``yieldstar_sim.scenarios``. ``pyproject.toml`` can either
discover packages or map a folder to a package, not both, so the list is made here: every
``yieldstar_sim*`` package found on disk, plus the mapped one. Everything else about the
project is in ``pyproject.toml``.
"""

from __future__ import annotations

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["yieldstar_sim", "yieldstar_sim.*"]),
        "yieldstar_sim.scenarios",
    ],
    package_dir={"yieldstar_sim.scenarios": "scenarios"},
)
