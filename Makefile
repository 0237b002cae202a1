# Two commands set everything up on a fresh machine (Python 3.11+, make):
#   make demo   the main job: the durable-start scenario on DuckDB, its graph in out/
#               (installs only the runtime dependencies: pip install -e .)
#   make test   the test suite (installs the `dev` extra; the notebooks run headless in it)
# And:
#   make docs           the documentation site (mkdocs build --strict) into build/site
#   make lab            JupyterLab on notebooks/ (installs the `lab` extra)
#   make browser-test   Voila + Debian's Chromium: the stepper in a real browser
#   make test-postgres  the PostgreSQL tests on a throwaway local cluster (scripts/postgres.sh)
#   make bench-smoke    every benchmark once at its smallest (--smoke), as CI runs them
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Jupyter and IPython keep their state here (gitignored), not in $HOME.
JUPYTER_STATE := $(CURDIR)/build/jupyter
JUPYTER_ENV := JUPYTER_CONFIG_DIR=$(JUPYTER_STATE)/config JUPYTER_DATA_DIR=$(JUPYTER_STATE)/data \
	JUPYTER_RUNTIME_DIR=$(JUPYTER_STATE)/runtime IPYTHONDIR=$(JUPYTER_STATE)/ipython \
	JUPYTER_PLATFORM_DIRS=1

.PHONY: setup demo test test-postgres lint docs check-notebooks bench bench-smoke bench-stepper lab \
	browser-test clean

# Everything: the runtime, the test tools, linters and the docs toolchain (the `dev` extra).
setup: $(VENV)/.installed

# The runtime dependencies only: what `make demo` and the CLI need.
$(VENV)/.runtime-installed: pyproject.toml setup.py
	$(PYTHON) -c 'import sys; sys.exit("yieldstar_sim needs Python 3.11 or newer" if sys.version_info < (3, 11) else 0)'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(VENV)/.installed: $(VENV)/.runtime-installed
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

demo: $(VENV)/.runtime-installed
	$(BIN)/yieldstar-sim run durable-start --out out

# On every core (pytest-xdist): each test is independent of the others' order and process.
test: setup
	$(BIN)/python -m pytest -n auto

# The tests marked postgres, on a cluster started for them in a temp directory and stopped after
# (Debian's postgresql: scripts/postgres.sh install). `make test` runs them too when
# YIELDSTAR_PG_DSN names a server, and skips them otherwise.
test-postgres: setup
	scripts/postgres.sh install
	eval "$$(scripts/postgres.sh start)" && \
		trap 'scripts/postgres.sh stop "$$YIELDSTAR_PG_DIR"' EXIT && \
		$(BIN)/python -m pytest -m postgres

lint: setup
	$(BIN)/ruff check yieldstar_sim tests benchmarks scenarios scripts docs setup.py
	$(BIN)/ruff format --check yieldstar_sim tests benchmarks scenarios scripts docs setup.py
	$(BIN)/mypy

# The documentation site; --strict turns a broken link or API reference into a failure.
docs: setup
	NO_MKDOCS_2_WARNING=1 MPLBACKEND=Agg $(BIN)/mkdocs build --strict

# Committed notebooks carry no outputs and no volatile metadata (scripts/strip_notebooks.py).
check-notebooks: setup
	$(BIN)/python scripts/strip_notebooks.py --check

# Every benchmark, quick; run one without --quick for the full figures (see benchmarks/README.md).
bench: setup
	for bench in runtime postgres engine simulation explorer views stepper; do \
		MPLBACKEND=Agg $(BIN)/python benchmarks/bench_$$bench.py --quick || exit 1; done

# Every benchmark and section once, at the tiniest sizes (benchmarks/smoke.py): a benchmark an
# API change broke fails it; a missed target never does. About 2 minutes on 2 shared cores.
# bench_postgres runs on the server YIELDSTAR_PG_DSN names (CI starts one) and skips without.
bench-smoke: setup
	MPLBACKEND=Agg $(BIN)/python benchmarks/smoke.py

bench-stepper: setup
	MPLBACKEND=Agg $(BIN)/python benchmarks/bench_stepper.py

lab: $(VENV)/.lab-installed
	$(JUPYTER_ENV) $(BIN)/jupyter lab notebooks/

$(VENV)/.lab-installed: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev,lab]'
	touch $@

# Chromium comes from Debian (apt), never from `playwright install`.
browser-test: $(VENV)/.browser-installed
	test -x /usr/bin/chromium || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	$(JUPYTER_ENV) MPLBACKEND=Agg $(BIN)/python -m pytest -m browser tests/browser

$(VENV)/.browser-installed: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev,browser]'
	touch $@

clean:
	rm -rf $(VENV) out build/jupyter build/site .pytest_cache .mypy_cache .ruff_cache .hypothesis
