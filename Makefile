# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8080
# Extras for `make install` / `make run`, e.g. EXTRAS=postgres or EXTRAS=postgres,otel.
EXTRAS ?=
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run test lint typecheck unit install install-test clean bench screenshot

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# What running needs, and nothing else (no test tools).
$(STAMP): pyproject.toml $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.$(if $(EXTRAS),[$(EXTRAS)])'
	touch $(STAMP)

# The test tools and every extra the tests exercise (postgres, otel, django).
$(TEST_STAMP): pyproject.toml $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP) $(TEST_STAMP)

## Create .venv and install leasehold with its runtime dependencies only
install: $(STAMP)

## Install the test tools too (make test does this)
install-test: $(TEST_STAMP)

## Start the coordinator on the embedded SQLite default at http://127.0.0.1:$(PORT) (make run PORT=8081)
run: $(STAMP)
	$(BIN)/leasehold serve --port $(PORT)

## Lint, type-check and run every test (PostgreSQL and chromium are installed if missing)
test: $(TEST_STAMP)
	bash scripts/ensure-postgres.sh
	bash scripts/ensure-browser.sh
	$(BIN)/ruff check src tests bench scripts examples
	$(BIN)/ruff format --check src tests bench scripts examples
	$(BIN)/mypy
	$(BIN)/pytest

## Retake docs/dashboard.png from a real coordinator with a simulated workload (about a minute)
screenshot: $(TEST_STAMP)
	bash scripts/ensure-browser.sh
	$(BIN)/python -m tests.browser.screenshot docs/dashboard.png

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
