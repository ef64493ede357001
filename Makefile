# Two commands do all set-up: `make demo` and `make test`. Both create or refresh .venv from
# pyproject.toml (and setup.py) when it is missing or older than them, at the versions pinned in
# constraints.txt (refreshed on purpose by `make lock`), so every fresh machine resolves the same.
# PyMC 6 needs Python >= 3.12: the first of python3.12, python3.13, python3 on PATH, then pyenv's
# installs, that is 3.12 or newer (tools/find_python.sh); PYTHON=... overrides.
PYTHON ?= $(shell sh tools/find_python.sh)
ifeq ($(PYTHON),)
$(error pmctx needs Python 3.12 or newer and none was found on PATH or in pyenv; install one (e.g. `pyenv install 3.12`) or name it with `make PYTHON=/path/to/python3.12 ...`)
endif
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.pmctx-installed
PYTEST_WORKERS ?= 2
# Once per venv, for the user commands (demo): compile and cache the GUM's standard graphs
# (python -m pmctx.gum.warm, about a minute on an empty cache), so a first g.sample() reads them
# from disk; GUM_WARM=0 skips it. The tests compile their own models, so `make test` skips it.
GUM_WARM ?= 1
WARM_STAMP := $(VENV)/.pmctx-warm

.PHONY: demo demo-quick test test-slow check-install durations lint format bench bench-quick docs docs-noexec notebooks clean lock

# uv (pinned in constraints.txt) installs the pinned set into .venv: 26 s on a fresh machine
# with an empty download cache, against 80 s for pip, which stays the fallback where uv cannot
# be installed or cannot install (uv reads no pip.conf, so an index configured only there is
# pip's). --compile-bytecode as pip does: machines that set PYTHONDONTWRITEBYTECODE (this one
# does) never write the .pyc files, and without them every process paid 4.5 s more to import
# PyMC (6.7 s against 2.2 s), the tests' subprocesses and chain processes included.
$(STAMP): pyproject.toml setup.py constraints.txt
	@# a .venv from before the move to Python 3.12 (PyMC 6) is replaced, not patched
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null || rm -rf $(VENV)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if $(BIN)/python -m pip install -qq -c constraints.txt uv && \
		$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python \
			-c constraints.txt -e ".[dev]"; then :; \
	else \
		echo "uv could not install .venv; installing with pip instead"; \
		$(BIN)/python -m pip install --quiet --upgrade pip && \
		$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"; \
	fi
	@touch $(STAMP)

$(WARM_STAMP): $(STAMP)
	$(if $(filter 1,$(GUM_WARM)),$(BIN)/python -m pmctx.gum.warm)
	@touch $(WARM_STAMP)

# Re-resolve the newest versions pyproject.toml allows into constraints.txt (then run the tests).
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet --upgrade pip
	.venv-lock/bin/python -m pip install --quiet -e ".[dev]"
	{ echo "# Resolved versions every \`make\` venv installs from (-c), so fresh machines agree."; \
	  echo "# Refresh on purpose with \`make lock\`, never by accident; commit the result."; \
	  .venv-lock/bin/python -m pip freeze --all --exclude-editable | grep -v -e '^pmctx' -e '^pip=='; } > constraints.txt
	rm -rf .venv-lock

demo: $(WARM_STAMP)
	$(BIN)/pmctx demo --out pmctx-demo

demo-quick: $(WARM_STAMP)
	$(BIN)/pmctx demo --quick --out pmctx-demo

# pytest-xdist already runs one test per CPU, so each test's chains run in one process
# (PMCTX_CORES=1); tests that check parallel chains pass cores= explicitly.
TEST_ENV := PMCTX_CORES=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# --no-loadscope-reorder: xdist keeps the file order tests/conftest.py sets (longest first).
PYTEST := $(TEST_ENV) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile \
	--no-loadscope-reorder

test: $(STAMP)
	$(BIN)/ruff check pmctx models tests benchmarks notebooks setup.py
	$(BIN)/ruff format --check pmctx models tests benchmarks notebooks setup.py
	$(BIN)/lint-imports
	$(PYTEST) -m "not slow" --durations=30 --timeout=900

# pip install . over the newest supported stack changes none of its versions (CI runs this).
check-install:
	bash tools/check_install.sh $(PYTHON)

test-slow: $(STAMP)
	$(PYTEST) -m slow --durations=30 --timeout=900

# Refresh tests/durations.json: the seconds of each test file per suite, from which the tests
# hand the longest files to the xdist workers first (tests/conftest.py). Run on an idle machine
# from empty caches (a clean clone) so it measures what CI pays; commit the result.
durations: $(STAMP)
	-$(PYTEST) -q -m "not slow" --junitxml=$(VENV)/durations-fast.xml
	-$(PYTEST) -q -m slow --junitxml=$(VENV)/durations-slow.xml
	$(BIN)/python tools/test_durations.py $(VENV)/durations-fast.xml $(VENV)/durations-slow.xml

lint: $(STAMP)
	$(BIN)/ruff check pmctx models tests benchmarks notebooks setup.py
	$(BIN)/ruff format --check pmctx models tests benchmarks notebooks setup.py
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff check --fix pmctx models tests benchmarks notebooks setup.py
	$(BIN)/ruff format pmctx models tests benchmarks notebooks setup.py

# The docs site, with the tutorials executed (warnings are errors); docs-noexec skips execution.
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

docs-noexec: $(STAMP)
	PMCTX_DOCS_EXECUTE=0 $(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

# Re-execute every notebooks/*.ipynb in place at full settings (not PMCTX_QUICK), keeping the
# outputs and figures that are committed (inline backend, rendered by Agg: no display needed).
# Prints each notebook's wall time; fails when a ConvergenceWarning appears outside a cell
# tagged expect-convergence-warning. About 13 minutes on 2 CPUs (von Mises 6.5, IBP 3.5, GUM 2).
notebooks: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks --quick

clean:
	rm -rf $(VENV) pmctx-demo pmctx-fit build dist *.egg-info docs/_build docs/generated docs/jupyter_execute
