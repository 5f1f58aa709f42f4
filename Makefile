# The two commands of README.md:
#   make demo   compose and run the FINRA example workflow locally (no cloud, no server)
#   make test   build the cpython-mpk runtime (cached), then run the whole test suite on it
# and, for everyday work, the quick subset (tiers: pytest.ini, tests/conftest.py):
#   make test-fast  unit + local integration tests on a plain python3 venv: no CPython
#                   build, no QEMU, no Docker, nothing that needs the cpython-mpk runtime
# Everything they need is installed here (apt, pip); nothing is expected to be there.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
MPK_PYTHON := cpython-mpk/build/bin/python3
TEST_VENV := .venv-mpk
FAST_VENV := .venv-fast
FAST_TIERS := (unit or integration) and not (mpk or slow)
PYTEST_ARGS ?=

.PHONY: demo test test-fast install runtime runtime-lambda test-env clean
demo: $(VENV)/.installed
	$(VENV)/bin/faastlane run examples/finra --input-file examples/finra/input.json

install: $(VENV)/.installed
$(VENV)/.installed: setup.py
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
	    || [ ! -f $(TEST_VENV)/.installed ] || [ setup.py -nt $(TEST_VENV)/.installed ] || [ bench/setup.py -nt $(TEST_VENV)/.installed ]; then \
	  rm -rf $(TEST_VENV) && $(MPK_PYTHON) -m venv $(TEST_VENV) \
	  && $(TEST_VENV)/bin/pip install -q --upgrade pip \
	  && $(TEST_VENV)/bin/pip install -q -e '.[test]' -e ./bench && touch $(TEST_VENV)/.installed; fi

test: test-env runtime-lambda
	$(TEST_VENV)/bin/python -m pytest $(PYTEST_ARGS) tests

# The quick subset on the system python3 (3.11+), in its own venv: never the runtime build.
test-fast: $(FAST_VENV)/.installed
	@scripts/ensure-test-tools.sh
	$(FAST_VENV)/bin/python -m pytest -m "$(FAST_TIERS)" $(PYTEST_ARGS) tests

$(FAST_VENV)/.installed: setup.py bench/setup.py
	scripts/ensure-python-venv.sh $(PYTHON)
	rm -rf $(FAST_VENV) && $(PYTHON) -m venv $(FAST_VENV)
	$(FAST_VENV)/bin/pip install -q --upgrade pip
	$(FAST_VENV)/bin/pip install -q -e '.[test]' -e ./bench
	touch $@

clean:
	rm -rf $(VENV) $(TEST_VENV) $(FAST_VENV)
	$(MAKE) -C cpython-mpk clean
