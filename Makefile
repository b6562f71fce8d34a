# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit install clean bench screenshot

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## Start the coordinator on the embedded SQLite default at http://127.0.0.1:8080
run: $(STAMP)
	$(BIN)/leasehold serve

## Lint, type-check and run every test (PostgreSQL and chromium are installed if missing)
test: $(STAMP)
	bash scripts/ensure-postgres.sh
	bash scripts/ensure-browser.sh
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/mypy
	$(BIN)/pytest

## Retake docs/dashboard.png from a real coordinator with a simulated workload (about a minute)
screenshot: $(STAMP)
	bash scripts/ensure-browser.sh
	$(BIN)/python -m tests.browser.screenshot docs/dashboard.png

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
