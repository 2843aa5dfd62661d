# Everything runs in a virtualenv of its own, built from pyproject.toml + constraints.txt.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

# The suites start hundreds of Python processes of this checkout (CLI, MCP servers, fault
# children): with bytecode writing off (PYTHONDONTWRITEBYTECODE, set on some machines) each
# compiles the project again and pytest rewrites every test module again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test slow lint typecheck bench faults server-writers clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,semantic-test,providers]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dualmem demo

# Kùzu and LadybugDB cannot share a process (backends/graph/kuzu/engines.py): the last line runs
# the contract and graph suites again on LadybugDB, in a pytest of their own (the contract on
# the layers over that engine only: tests/every_layer.py).
# Tests marked `slow` are full-size runs of properties `make test` checks at a smaller size
# (12k episodes where it writes 3k): `make slow` runs them.
# Two workers, one per CI core (a serial run keeps about one busy); a file stays on one
# worker (`loadfile`), so its module fixtures (FalkorDB servers, filled stores) are built once.
PARALLEL := -n 2 --dist loadfile
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -m "not slow" $(PARALLEL)
	DUALMEM_TEST_GRAPH_ENGINE=ladybug $(BIN)/python -m pytest -q -m "not slow" $(PARALLEL) tests/contract tests/graph

slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

# The fault suite's full run: hundreds of rounds per family and layer (kill -9, full disks,
# hostile inputs), figures printed at the end. `make test` runs a few rounds of each.
FAULT_ITERATIONS ?= 200
faults: $(STAMP)
	DUALMEM_FAULT_ITERATIONS=$(FAULT_ITERATIONS) $(BIN)/python -m pytest -q tests/faults

# Issue 14's acceptance figure: 4 processes x 500 writes straight to a FalkorDB server
# (`make test` runs 4 x 100).
server-writers: $(STAMP)
	DUALMEM_SERVER_WRITES=500 $(BIN)/python -m pytest -q tests/falkor/test_many_writers.py
