# The two commands a new user runs: `make demo` and `make test`.
# Everything they need is installed here, into .venv, from the package index.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.demo-installed
DISTRIBUTIONS := -e ".[dev,spark,iceberg]" -e drivers/filesystem -e "drivers/s3[test]" -e "drivers/gcs[test]" -e drivers/azure -e drivers/hdfs \
                 -e plugins/prometheus -e plugins/zstd -e plugins/crc32c -e plugins/aes-gcm -e examples/driver-plugin
AZURITE := .tools/azurite/node_modules/.bin/azurite-blob
PYPROJECTS := pyproject.toml $(wildcard drivers/*/pyproject.toml plugins/*/pyproject.toml) examples/driver-plugin/pyproject.toml

# Every distribution this checkout holds, for `make wheels`.
WHEEL_SOURCES := . $(patsubst %/pyproject.toml,%,$(wildcard drivers/*/pyproject.toml plugins/*/pyproject.toml)) examples/driver-plugin

.PHONY: setup demo test test-fast proto bench bench-all lint clean reliability wheels

setup: $(STAMP) $(AZURITE)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(PYPROJECTS) | $(BIN)/python
	$(BIN)/python -m pip install --quiet $(DISTRIBUTIONS)
	touch $@ $(DEMO_STAMP)

# The demo needs only the core and the filesystem driver (a local directory
# is its object store): seconds to install, not the whole test stack.
$(DEMO_STAMP): pyproject.toml drivers/filesystem/pyproject.toml plugins/prometheus/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e . -e drivers/filesystem -e plugins/prometheus
	touch $@

# Azure tests run against Azurite, from npm, kept in a project-local folder.
$(AZURITE):
	npm install --prefix .tools/azurite --no-audit --no-fund --loglevel=error azurite@3

demo: $(DEMO_STAMP)
	$(BIN)/python examples/main_job.py --data-dir offload-data

# CI runs this. Hypothesis uses its bounded, derandomized profile unless told otherwise.
test: $(STAMP) $(AZURITE) lint
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(BIN)/python -m pytest

# The quick loop: no emulators, no Spark, no slow crash tests.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not emulator and not spark"

# The long reliability campaign (about half an hour on 2 cores): the tests in
# tests/reliability with the campaign's numbers; writes RELIABILITY.md.
reliability: $(STAMP)
	rm -f .reliability.jsonl
	OFFLOAD_RELIABILITY=campaign OFFLOAD_RELIABILITY_LOG=.reliability.jsonl $(BIN)/python -m pytest tests/reliability -q
	$(BIN)/python -m tests.reliability.report .reliability.jsonl > RELIABILITY.md

proto: $(STAMP)
	cd offload_core/proto && ../../$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. *.proto

# One table of every ratio against its limit, measured in one run.
bench: $(STAMP)
	$(BIN)/python bench/bench_table.py

# Every benchmark script, each with its own detail (minutes).
bench-all: $(STAMP)
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy offload_core $(wildcard drivers/*/offload_driver_*)

# Wheels of every distribution into dist/, for machines without this
# checkout: copy dist/ over and `pip install dist/*.whl` (or the ones wanted:
# the core, plus a driver or plugin, pip install dist/offload_core-*.whl
# dist/offload_driver_s3-*.whl). pip fetches the build backend (hatchling).
wheels: | $(BIN)/python
	rm -rf dist
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist $(WHEEL_SOURCES)
	ls dist

clean:
	rm -rf $(VENV) .tools offload-data .pytest_cache .hypothesis dist
