# Reviewer: `make run` opens the app, `make test` runs every test headless.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export QT_QPA_PLATFORM ?= offscreen

.PHONY: run test lint typecheck format bench screenshot package package-test clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	QT_QPA_PLATFORM= $(BIN)/reviewer-app $(ARGS)

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check reviewer_app tests bench examples
	$(BIN)/ruff format --check reviewer_app tests bench examples
	$(BIN)/lint-imports
	$(BIN)/mypy reviewer_app

format: $(VENV)/.installed-dev
	$(BIN)/ruff format reviewer_app tests bench examples
	$(BIN)/ruff check --fix reviewer_app tests bench examples

# Every benchmark next to its reference, in one run; ends with `GOAL <name> <measured> <target> PASS|MISS` lines.
$(VENV)/.installed-bench: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[bench]'
	touch $@ $(VENV)/.installed-run

bench: $(VENV)/.installed-bench
	$(BIN)/python bench/run_all.py

# Installers: dist/reviewer-app/ (PyInstaller onedir), the .deb and the .tar.gz; see packaging/build_installers.py.
$(VENV)/.installed-package: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[package,postgres]'
	touch $@ $(VENV)/.installed-run

package: $(VENV)/.installed-package
	$(BIN)/python packaging/build_installers.py linux

# Runs the built artefacts (frozen --self-test, the window offscreen, the .deb's launcher); see packaging/smoke_test.py.
package-test: $(VENV)/.installed-package
	$(BIN)/python packaging/smoke_test.py

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache
