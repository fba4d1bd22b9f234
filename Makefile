# Tether — one entry point for every job. `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The venv first on PATH for every recipe: commands the tests and the demo run in the sandbox
# (`python3 -m pytest`) must find this environment's interpreter and packages.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
PYTEST_ARGS ?=

.PHONY: help venv demo test test-fast test-python test-neovim test-vscode lint typecheck bench clean

help:
	@echo "make demo       - scripted agent session through the real language server (offline unless ANTHROPIC_API_KEY)"
	@echo "make test       - everything: lint, types, unit, integration, LSP e2e, Neovim, VS Code"
	@echo "make test-fast  - unit tests only (the inner loop)"
	@echo "make bench      - benchmarks (policy, sandbox, checkpoints, LSP) with ratios to in-run baselines"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/tether demo $(if $(PROMPT),--prompt "$(PROMPT)")

lint: $(STAMP)
	$(VENV)/bin/ruff check server tests
	$(VENV)/bin/ruff format --check server tests

typecheck: $(STAMP)
	$(VENV)/bin/mypy

test-fast: $(STAMP)
	$(VENV)/bin/pytest tests/unit -q $(PYTEST_ARGS)

test-python: $(STAMP)
	$(VENV)/bin/pytest tests -q --ignore=tests/e2e/test_vscode.py --ignore=tests/e2e/test_neovim.py $(PYTEST_ARGS)

test-neovim: $(STAMP)
	$(VENV)/bin/pytest tests/e2e/test_neovim.py -q $(PYTEST_ARGS)

test-vscode: $(STAMP)
	bash editors/vscode/scripts/setup-e2e.sh
	$(VENV)/bin/pytest tests/e2e/test_vscode.py -q $(PYTEST_ARGS)

test: lint typecheck test-python test-neovim test-vscode

bench: $(STAMP)
	@for b in tests/bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache build *.egg-info
