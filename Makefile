# The two public commands: `make demo` and `make test`. Both start from nothing:
# they install the system tools the sandbox needs and build .venv/ at the repo root.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SYSTEM_STAMP := $(VENV)/.system-tools

# pytest-xdist workers. Sandbox tests wait on bubblewrap, strace and their agents more
# than they compute, so more workers than the host's 2 cores pay (measured: docs/testing.md).
WORKERS ?= 4
# Real packages `make demo` scores (each is detonated, then the agent runs once on it).
DEMO_REAL_TASKS ?= 8
PYTEST := $(BIN)/pytest
# A run starts hundreds of Python processes (pytest's workers, `python -m assay` children,
# Ray's workers). Where the host sets PYTHONDONTWRITEBYTECODE, each would compile every
# module it imports, every time (collecting the suite: 10 CPU-s, 4 with bytecode kept):
# the project's own bytecode is kept under its __pycache__ folders (ignored by git), and
# the venv's is compiled when it is installed.
unexport PYTHONDONTWRITEBYTECODE
# Tests marked xdist_group share a worker (--dist loadgroup); tests marked serial run
# after the parallel run, alone.
PARALLEL := $(PYTEST) -n $(WORKERS) --dist loadgroup
# The serial run collects only the modules that mark a test serial (collecting the whole
# suite for one test cost most of that run).
SERIAL_FILES = $(shell grep -rl 'pytest.mark.serial' tests --include='test_*.py')

.PHONY: demo test check lint typecheck unit fast clean system-tools

# The round of the bundled agents on the synthetic corpus, then the reference agent on a
# seeded draw of the real-provenance corpus's set-aside packages (sealed samples unpacked
# only for the sandbox); --fail-under 0 shows the score without failing on it.
demo: $(STAMP)
	$(BIN)/assay demo
	$(BIN)/assay agent bundle agents/reference -o out/reference-agent.py
	$(BIN)/assay eval out/reference-agent.py --track packages --corpus corpus-real/set-aside \
		--tasks $(DEMO_REAL_TASKS) --reps 1 --fail-under 0

# Lint, types and the tests at once (each one's output shown whole when it ends); any
# failure fails the target.
test: $(STAMP)
	$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck unit

# The quick loop: lint, types and the tests that need no sandbox and are not slow.
check: $(STAMP)
	$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck fast

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks agents
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(PARALLEL) -m "not serial"
	$(PYTEST) -n 0 -m serial $(SERIAL_FILES)

fast: $(STAMP)
	$(PARALLEL) -m "not sandbox and not slow and not serial"

system-tools:
	@./scripts/install-system-tools.sh

# Re-run the installer whenever it or a lock file it installs from changes.
$(SYSTEM_STAMP): scripts/install-system-tools.sh scripts/agent-runtime.txt \
		scripts/install-detonation-runtime.sh $(wildcard scripts/mcp-runtime/*)
	@mkdir -p $(VENV)
	./scripts/install-system-tools.sh
	@touch $@

$(STAMP): pyproject.toml $(SYSTEM_STAMP)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# uv installs the same resolution as pip, in parallel: 9 s for a fresh venv where pip
	@# took 81 s. The venv keeps pip for the tests and importers that call it.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check 'uv>=0.5,<1'
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[test,ray,chain]'
	@touch $@

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
