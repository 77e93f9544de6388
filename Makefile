# The two commands of the README: `make demo` (see it work) and `make test` (the test suite).
# Both install what they need into .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install demo test lint bench

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/sessionsched demo

lint: install
	$(VENV)/bin/ruff check sessionsched tests benchmarks

test: lint
	$(VENV)/bin/pytest -q -ra

bench: install
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done
