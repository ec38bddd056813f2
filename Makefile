# The two commands of the README: `make run` and `make test`. Each creates .venv when it is missing
# and installs what it needs, so both work on a fresh machine with only Python 3.11 and Java 17.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SCENARIOS ?= 300
SEED ?= 1
OUT ?= out/harness

.PHONY: run test lint typecheck pytest thorough notebooks docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamps record what is installed; they are redone when pyproject.toml changes.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[spark]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The main job: the Spark harness on an embedded local[*] Spark (Java 17 on the PATH).
run: $(VENV)/.installed-run
	$(BIN)/python -m rebalancing.harness --scenarios $(SCENARIOS) --seed $(SEED) --out $(OUT) --replace

test: lint typecheck pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tools tests benchmarks jobs notebooks/execute.py docs/hooks
	$(BIN)/ruff format --check src tools tests benchmarks jobs notebooks/execute.py docs/hooks

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy src tools

# pytest exits 5 when it collects no test: that is a failure here, like any non-zero exit.
# Two workers (pytest-xdist) for the two cores the machines have; --dist loadgroup keeps the
# tests that share an embedded Spark, a cluster or a broker on one worker (tests/conftest.py).
PYTEST_WORKERS ?= 2
pytest: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

# The thorough profile: ten times more hypothesis examples, all the seeded scenarios, and the
# tests marked `thorough` (the heavy versions of checks made lighter in `make test`).
thorough: $(VENV)/.installed-dev
	HYPOTHESIS_PROFILE=thorough $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

# Re-run the notebooks and save their outputs (plots) into the committed files.
notebooks: $(VENV)/.installed-dev
	$(BIN)/python notebooks/execute.py

# The documentation site into site/, strict: a broken link or an unrenderable docstring fails it.
# make test builds it too, from tests/test_docs.py (so CI and a bare pytest run cover it).
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis
