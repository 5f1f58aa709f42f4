# The two commands of README.md:
#   make demo   compose and run the FINRA example workflow locally (no cloud, no server)
#   make test   build the cpython-mpk runtime (cached), then run the whole test suite on it
# and, for everyday work, the quick subset (tiers: pytest.ini, tests/conftest.py):
#   make test-fast  the gates (make lint), then unit + local integration tests on a plain
#                   python3 venv: no CPython build, no QEMU, no Docker, nothing that needs
#                   the cpython-mpk runtime
#   make lint       ruff and mypy (settings: pyproject.toml), zero findings
# Everything they need is installed here (apt, pip); nothing is expected to be there.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
MPK_PYTHON := cpython-mpk/build/bin/python3
TEST_VENV := .venv-mpk
FAST_VENV := .venv-fast
FAST_TIERS := (unit or integration) and not (mpk or slow)
PYTEST_ARGS ?=

.PHONY: demo test test-fast lint install runtime runtime-lambda test-env clean
demo: $(VENV)/.installed
	$(VENV)/bin/faastlane run examples/finra --input-file examples/finra/input.json

install: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	scripts/ensure-python-venv.sh $(PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e .
	touch $@

runtime:
	$(MAKE) -C cpython-mpk

# The runtime again, built in an old-glibc Debian root for Lambda's custom runtime
# (cpython-mpk/build-lambda; cached like the other: minutes cold, a second warm).
runtime-lambda:
	$(MAKE) -C cpython-mpk lambda

# The test environment runs on the cpython-mpk interpreter: the runtime is an ordinary
# python3.13 that runs this whole suite (and the MPK tests need it).
test-env: runtime
	@scripts/ensure-test-tools.sh
	@if [ "$$(readlink -f $(TEST_VENV)/bin/python3 2>/dev/null)" != "$$(readlink -f $(MPK_PYTHON))" ] \
	    || [ ! -f $(TEST_VENV)/.installed ] || [ pyproject.toml -nt $(TEST_VENV)/.installed ]; then \
	  rm -rf $(TEST_VENV) && $(MPK_PYTHON) -m venv $(TEST_VENV) \
	  && $(TEST_VENV)/bin/pip install -q --upgrade pip \
	  && $(TEST_VENV)/bin/pip install -q -e '.[test]' && touch $(TEST_VENV)/.installed; fi

test: test-env runtime-lambda
	$(call gates,$(TEST_VENV))
	$(TEST_VENV)/bin/python -m pytest $(PYTEST_ARGS) tests

# The code gates: lint and types, zero findings (a rule switched off says why in
# pyproject.toml). Run before the tests, so that a finding fails in seconds.
gates = $(1)/bin/ruff check --quiet && $(1)/bin/mypy
lint: $(FAST_VENV)/.installed
	$(call gates,$(FAST_VENV))

# The quick subset on the system python3 (3.11+), in its own venv: never the runtime build.
test-fast: $(FAST_VENV)/.installed
	@scripts/ensure-test-tools.sh
	$(call gates,$(FAST_VENV))
	$(FAST_VENV)/bin/python -m pytest -m "$(FAST_TIERS)" $(PYTEST_ARGS) tests

$(FAST_VENV)/.installed: pyproject.toml
	scripts/ensure-python-venv.sh $(PYTHON)
	rm -rf $(FAST_VENV) && $(PYTHON) -m venv $(FAST_VENV)
	$(FAST_VENV)/bin/pip install -q --upgrade pip
	$(FAST_VENV)/bin/pip install -q -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) $(TEST_VENV) $(FAST_VENV)
	$(MAKE) -C cpython-mpk clean
