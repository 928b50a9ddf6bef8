# vaultmem — developer commands. `make serve` and `make test` work on a fresh machine with Python 3.11+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
VAULT ?= $(or $(VAULTMEM_VAULT),$(HOME)/vaultmem-vault)
# The daemon's port (`make serve PORT=7900`).
PORT ?= 7821
STAMP := $(VENV)/.installed
# Synthetic vault sizes for benchmarks/scale.py (add 100000 for the full run, ~15 min the first time).
BENCH_SIZES ?= 1000,10000
# pytest-xdist workers for `make test` (the tests mostly wait on subprocesses and fsync, so more
# workers than cores pays off; TEST_WORKERS=0 runs in one process).
TEST_WORKERS ?= 3

.PHONY: install test test-all lint bench serve clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n $(TEST_WORKERS)

test-all: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check vaultmem tests benchmarks
	$(BIN)/ruff format --check vaultmem tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/write_path.py
	$(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/mcp_e2e.py
	$(BIN)/python benchmarks/sync.py
	$(BIN)/python benchmarks/scale.py --sizes $(BENCH_SIZES)
	$(BIN)/python benchmarks/as_of.py

serve: $(STAMP)
	$(BIN)/vaultmem serve --vault "$(VAULT)" --port "$(PORT)" --init

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
