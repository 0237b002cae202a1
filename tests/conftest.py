"""Tests marked ``postgres`` need a PostgreSQL server: they run where ``YIELDSTAR_PG_DSN`` names
one (CI starts a throwaway cluster; locally ``make test-postgres``) and are skipped, with the
reason, everywhere else. Every Hypothesis test draws the same examples on every run and machine
(a fixed seed, no example database): a test that fails does so everywhere, and CI never meets
an example no one ran before."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None)
settings.load_profile("deterministic")

#: The libpq connection string of the server the postgres tests use, or "" for none.
PG_DSN = os.environ.get("YIELDSTAR_PG_DSN", "").strip()
NO_SERVER = (
    'no PostgreSQL server: set YIELDSTAR_PG_DSN, e.g. eval "$(scripts/postgres.sh start)", '
    "or run make test-postgres"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if PG_DSN:
        return
    skip = pytest.mark.skip(reason=NO_SERVER)
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)
