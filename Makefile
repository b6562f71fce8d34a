# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8080
# Extras for `make install` / `make run`, e.g. EXTRAS=postgres or EXTRAS=postgres,otel.
EXTRAS ?=
# The test processes `make test` runs in parallel: most tests wait on a coordinator, a
# worker or a clock rather than compute, so twice the cores keeps both busy.
TEST_PROCESSES ?= 4
# Each module's tests go to one process: a module-scoped coordinator (or other fixture)
# then starts once, not once in every process that got some of its tests. The modules
# start in the order tests/conftest.py gives them (the longest first), not by size.
DIST := --dist loadscope --no-loadscope-reorder
# The tests run with bytecode caches on even where the environment turns them off
# (PYTHONDONTWRITEBYTECODE, common in containers): otherwise each test process rewrites
# every test module's asserts again (about 3 s of CPU each) and each of the few hundred
# coordinator, worker and CLI processes the tests start compiles leasehold again.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest
# One stamp per set of extras: `make install EXTRAS=postgres` on a .venv made without it
# installs the extra, rather than finding the plain install up to date.
comma := ,
STAMP := $(VENV)/.installed$(if $(EXTRAS),-$(subst $(comma),-,$(EXTRAS)))
TEST_STAMP := $(VENV)/.installed-test

SOURCES := src tests bench scripts examples

.PHONY: run test check lint typecheck unit imports install install-test clean bench screenshot

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
	touch $(VENV)/.installed $(TEST_STAMP)

## Create .venv and install leasehold with its runtime dependencies only
install: $(STAMP)

## Install the test tools too (the test targets do this)
install-test: $(TEST_STAMP)

## Start the coordinator on the embedded SQLite default at http://127.0.0.1:$(PORT) (make run PORT=8081)
run: $(STAMP)
	$(BIN)/leasehold serve --port $(PORT)

## Lint, type-check and run every test with coverage (PostgreSQL, chromium, nginx and
## Prometheus are installed if missing). mypy runs beside the tests, not before them: on a
## clean clone (no cache) it keeps one core busy for about 15 s, while the other had nothing
## to do. Its verdict is printed after the tests', and either failing fails the target.
test: lint imports
	bash scripts/ensure-postgres.sh
	bash scripts/ensure-browser.sh
	bash scripts/ensure-debian-package.sh nginx nginx
	bash scripts/ensure-debian-package.sh openssl openssl
	bash scripts/ensure-debian-package.sh prometheus prometheus promtool
	$(BIN)/mypy > $(VENV)/.typecheck.out 2>&1 & typecheck=$$!; \
	$(PYTEST) -n $(TEST_PROCESSES) $(DIST) --cov --cov-report=term:skip-covered; tests=$$?; \
	wait $$typecheck; types=$$?; \
	echo "$(BIN)/mypy"; cat $(VENV)/.typecheck.out; \
	exit $$(( tests || types ))

## The fast lane, under a minute: lint, types, the import graph, and every test that starts
## no process (unit, contract, the app served in the test process), on SQLite, with fewer
## state-machine examples; `make test` runs them all on both backends
check: lint typecheck imports
	LEASEHOLD_STATEFUL_EXAMPLES=30 $(PYTEST) -n $(TEST_PROCESSES) $(DIST) -m fast -k "not postgres" -q

## ruff's lint rules and its formatting
lint: $(TEST_STAMP)
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)

## mypy --strict over the package and the tests (pyproject.toml [tool.mypy])
typecheck: $(TEST_STAMP)
	$(BIN)/mypy

## The package graph has no cycle and the store is a leaf (scripts/check_imports.py)
imports: $(TEST_STAMP)
	$(BIN)/python scripts/check_imports.py

## The rules alone, no I/O
unit: $(TEST_STAMP)
	$(PYTEST) tests/unit -q

## A short end-to-end throughput run (2,000 no-op jobs, 2 workers); README "Performance"
## lists the full benchmarks
bench: $(STAMP)
	$(BIN)/python -m bench.throughput --jobs 2000

## Retake docs/dashboard.png from a real coordinator with a simulated workload (about a minute)
screenshot: $(TEST_STAMP)
	bash scripts/ensure-browser.sh
	$(BIN)/python -m tests.browser.screenshot docs/dashboard.png

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*
