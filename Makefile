# Two entry points (see README): `make check` sets up and runs the default model check;
# `make test` sets up and runs the test suite. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: check test replay mutants prove bench venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(STAMP)

venv: $(STAMP)

check: $(STAMP)
	$(BIN)/kraft-verify check

test: $(STAMP)
	$(BIN)/python -m pytest

replay: $(STAMP)
	$(BIN)/kraft-verify replay specs/scenarios/*.json

mutants: $(STAMP)
	$(BIN)/kraft-verify mutants

prove: $(STAMP)
	$(BIN)/kraft-verify prove

bench: $(STAMP)
	$(BIN)/python bench/bfs_bench.py --runs 2 --json bench/results/bfs.json
	$(BIN)/python bench/prove_bench.py --max-brokers 8 --depth 4 --json bench/results/prove.json

clean:
	rm -rf $(VENV) build *.egg-info
