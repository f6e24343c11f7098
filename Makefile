# Two commands do all set-up: `make demo` and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Parallel test processes; 2 fits the 2-core CI machine.
TEST_JOBS ?= 2

.PHONY: demo test bench lint install

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) manage.py demo

test: $(STAMP)
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) manage.py check
	$(PY) -m pytest -n $(TEST_JOBS) $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The benchmark wants a database of its own: PostgreSQL when BENCH_DATABASE_URL names one (it is
# dropped and created), else a fresh SQLite file under var/.
bench: $(STAMP)
	rm -f var/bench.sqlite3*
	DATABASE_URL=$${BENCH_DATABASE_URL:-sqlite:///$(CURDIR)/var/bench.sqlite3} $(PY) manage.py bench_db
	DATABASE_URL=$${BENCH_DATABASE_URL:-sqlite:///$(CURDIR)/var/bench.sqlite3} $(PY) manage.py bench --json var/bench/bench.json
