# The two set-up commands: `make demo` and `make test`. Both create .venv when it is missing.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
# The demo needs the package alone (its dependencies, no extra): `make demo` on a fresh clone
# installs about 80 MB, not the test extra's 740 MB. The test install covers it too.
DEMO_STAMP := $(VENV)/.installed

.PHONY: help demo test lint typecheck pytest behave robot bench docs clean

help:
	@echo "make demo   create .venv, install the package (no extra), run the demo on the built-in default"
	@echo "make test   create .venv, install, run ruff, mypy, pytest, behave and robot"
	@echo "make bench  run the benchmarks and write docs/performance.md"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/mcp-actors demo

test: lint typecheck pytest behave robot
	@echo "make test: ruff, mypy, pytest, behave and robot all passed"

lint: $(STAMP)
	$(BIN)/ruff check actors tests features benchmarks
	$(BIN)/ruff format --check actors

typecheck: $(STAMP)
	$(BIN)/mypy

# Every machine runs what CI runs: a skip or xfail not listed in tests/allowed-skips.txt fails
# the run (tests/harness/skips.py), and so does a run that collects no test (exit status 5).
# pytest-xdist workers, a test file each at a time: one more than the CPUs this process may use
# (tests/harness/workers.py; a CPU quota counts), as a test spends much of its time waiting on
# the server processes it starts (benchmarks/results/test-suite.md has the times). Module
# fixtures stay with their file. PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= $(shell $(PYTHON) tests/harness/workers.py 2>/dev/null || echo 2)
pytest: $(STAMP)
	status=0; $(BIN)/pytest -q $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile) \
	  || status=$$?; \
	if [ $$status -eq 5 ]; then echo "make pytest: pytest collected no tests" >&2; fi; \
	exit $$status

# npm packages of the interop suite (third-party MCP servers) and of the conformance suite (with
# the Node 22 it needs), pinned by their lock files: installed when missing or older than the
# lock file. They are part of the test run: without npm, make test fails here and says so.
NPM_DEPS := tests/interop/node_modules tests/conformance/node_modules tests/gateway/node_modules
pytest: $(NPM_DEPS)
tests/%/node_modules: tests/%/package-lock.json
	@command -v npm >/dev/null || { echo "make test needs npm (Node.js) to install tests/$*: the interop" \
	  "and conformance suites run third-party MCP servers and the official conformance suite from npm." \
	  "Install Node.js 18+ with npm, then run make test again." >&2; exit 1; }
	npm ci --prefix tests/$* --no-audit --no-fund
	touch $@

# The FastMCP task server (tests/servers/fastmcp_task_server.py) runs in a venv of its own: its
# fastmcp-tasks pins a fastmcp-slim the test extra cannot share. Made anew when its pins change.
FASTMCP_TASKS_VENV := tests/servers/.venv-fastmcp-tasks
pytest: $(FASTMCP_TASKS_VENV)
$(FASTMCP_TASKS_VENV): tests/servers/fastmcp-tasks.txt
	rm -rf $@
	$(PYTHON) -m venv $@
	$@/bin/python -m pip install --quiet --disable-pip-version-check -r $< || { rm -rf $@; exit 1; }
	touch $@

# The cluster tests run a real Redis (Debian's redis-server, which .ci/run installs when missing).
.PHONY: redis-server
# Real programs from Debian that the tests run: redis-server (tests/cluster), nginx (the deploy
# files' load balancer), chromium (the operator page's browser tests) and bubblewrap (the
# servers' sandboxes, tests/sandbox). Installed when missing (.ci/need-debian: apt-get, as root
# or with sudo).
SYSTEM_DEPS := redis-server nginx chromium bwrap
pytest: $(SYSTEM_DEPS)
.PHONY: $(SYSTEM_DEPS)
redis-server:
	@bash .ci/need-debian redis-server redis-server
nginx:
	@bash .ci/need-debian nginx nginx
chromium:
	@bash .ci/need-debian chromium chromium
bwrap:
	@bash .ci/need-debian bwrap bubblewrap

# behave exits 0 on zero scenarios: insist that some ran and none failed or were skipped.
behave: $(STAMP)
	$(BIN)/behave --format progress --no-capture-stderr features | tee $(VENV)/behave.out
	grep -Eq '^[1-9][0-9]* scenarios? passed, 0 failed, 0 skipped' $(VENV)/behave.out

robot: $(STAMP)
	$(BIN)/robot --outputdir robot/results --loglevel DEBUG robot

# Installs the bench extra (matplotlib) once; the peers' virtual environments are made by the
# harness itself under benchmarks/.venvs/.
bench: $(STAMP)
	$(BIN)/python -c 'import matplotlib' 2>/dev/null || $(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m benchmarks

# Generated files live in docs/generated/, apart from the written pages.
docs: $(STAMP)
	$(BIN)/python -m robot.libdoc actors.testing.robotlib docs/generated/robotlib.html

clean:
	rm -rf $(VENV) robot/results .mypy_cache .ruff_cache
	rm -rf $(NPM_DEPS) $(FASTMCP_TASKS_VENV)
