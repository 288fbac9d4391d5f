# The two public commands: `make demo` and `make test`. Both start from nothing:
# they install the system tools the sandbox needs and build .venv/ at the repo root.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SYSTEM_STAMP := $(VENV)/.system-tools

.PHONY: demo test lint typecheck unit clean system-tools

demo: $(STAMP)
	$(BIN)/assay demo

test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks agents
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

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
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,ray]'
	@touch $@

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
