# Two commands set everything up on a fresh machine (Python 3.11+, make):
#   make demo   the main job: the durable-start scenario on DuckDB, its graph in out/
#   make test   the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit("yieldstar_sim needs Python 3.11 or newer" if sys.version_info < (3, 11) else 0)'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: setup
	$(BIN)/yieldstar-sim run durable-start --out out

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check yieldstar_sim tests benchmarks scenarios
	$(BIN)/ruff format --check yieldstar_sim tests benchmarks scenarios
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/bench_runtime.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache .hypothesis
