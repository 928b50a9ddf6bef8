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
# Vault sizes for benchmarks/startup.py (the daemon's RSS and cold start against the targets); each
# is built once under benchmarks/out/vaults/ (100k: ~15 min the first time on a quiet machine).
STARTUP_SIZES ?= 1000,10000,100000
# pytest-xdist workers for `make test` (the tests mostly wait on subprocesses and fsync, so more
# workers than cores pays off; TEST_WORKERS=0 runs in one process).
TEST_WORKERS ?= 3

.PHONY: install test test-all lint bench serve clean

# pip prints each package it collects and installs: a first install downloads ~400 MB (LanceDB,
# pyarrow, onnxruntime; the model is in the repo) and takes a few minutes.
$(STAMP): pyproject.toml
	@echo "==> $(VENV): a virtual environment with vaultmem and its dependencies (a few minutes the first time)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[dev]'
	@touch $(STAMP)
	@echo "==> installed: $(abspath $(BIN))/vaultmem"
	@echo "    put it on PATH with:  export PATH=\"$(abspath $(BIN)):\$$PATH\""

install: $(STAMP)

# Bytecode is compiled once first: where PYTHONDONTWRITEBYTECODE is set (some sandboxes and CI
# images set it), each of the suite's `vaultmem` subprocesses would compile the package again.
# The suite runs without it, so that pytest keeps the test modules it rewrites for its assertions
# (`*-pytest-*.pyc`): otherwise each worker parses and rewrites every test module, ~8 s of CPU each.
test: $(STAMP)
	@$(BIN)/python -m compileall -q vaultmem tests >/dev/null
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -m "not slow" -n $(TEST_WORKERS)

test-all: $(STAMP)
	@$(BIN)/python -m compileall -q vaultmem tests >/dev/null
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check vaultmem tests benchmarks tools
	$(BIN)/ruff format --check vaultmem tests benchmarks tools
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/embedder.py
	$(BIN)/python benchmarks/write_path.py
	$(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/mcp_e2e.py
	$(BIN)/python benchmarks/sync.py
	$(BIN)/python benchmarks/scale.py --sizes $(BENCH_SIZES)
	$(BIN)/python benchmarks/cli_start.py
	$(BIN)/python benchmarks/startup.py --sizes $(STARTUP_SIZES)
	$(BIN)/python benchmarks/as_of.py

serve: $(STAMP)
	$(BIN)/vaultmem serve --vault "$(VAULT)" --port "$(PORT)" --init

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
