# The two commands a newcomer needs: `make run` and `make test`.
# Both set themselves up (virtualenv, dependencies, database) first.

PY ?= $(shell command -v python3.12 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# Procfile: one worker for everything (a small machine); Procfile.large: each
# part in processes of its own.
PROCFILE ?= Procfile
export HOST PORT

.PHONY: help run test setup lint format bench clean
# `make` alone says what there is, instead of quietly making a virtualenv.
.DEFAULT_GOAL := help

help:
	@echo "make run      set up, then start web + workers + scheduler on http://$(HOST):$(PORT)"
	@echo "              (PROCFILE=Procfile.large: each part in processes of its own)"
	@echo "make test     set up, then run the tests (PYTEST_ARGS=\"-m ''\" adds the slow ones)"
	@echo "make setup    only create .venv and install"
	@echo "make lint     ruff check and format check"
	@echo "make format   ruff format and fix"
	@echo "make bench    measure, write bench/RESULTS.md (BENCH_ARGS=\"--only NAME\")"
	@echo "make clean    delete .venv and var/: with SQLite, every monitor, account and the secret key"

$(BIN)/python:
	@$(PY) -c 'import sys; v=sys.version_info; sys.exit(0 if v >= (3, 12) else f"Pagewatch needs Python 3.12 or newer; {sys.executable} is {v.major}.{v.minor}. Install 3.12+ or run make PY=/path/to/python3.12")'
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml tests/js/package-lock.json | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	@if command -v npm >/dev/null 2>&1; then npm ci --prefix tests/js --no-audit --no-fund --loglevel=error; else echo "npm not found: the JS SDK, CLI and MCP tests and the axe-core accessibility checks will skip (CI=true makes them fail)"; fi
	@touch $@ $(VENV)/.installed-run

setup: $(VENV)/.installed-run

# Through config.run, so that .env's variables apply to migrate and bootstrap too.
run: $(VENV)/.installed-run
	$(BIN)/python -m config.run --check -f $(PROCFILE)
	$(BIN)/python -m config.run -- $(BIN)/python manage.py migrate --noinput
	$(BIN)/python -m config.run -- $(BIN)/python manage.py bootstrap
	exec $(BIN)/python -m config.run -f $(PROCFILE)

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(VENV)/.installed-run
	$(BIN)/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var *.egg-info tests/js/node_modules
