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

# The benchmark measures the production set-up: PostgreSQL and a real Redis (the machine's own
# unless BENCH_DATABASE_URL / BENCH_REDIS_URL say otherwise). Its database is dropped and created.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/greenlight_bench
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/7
BENCH_ENV = DATABASE_URL=$(BENCH_DATABASE_URL) REDIS_URL=$(BENCH_REDIS_URL) \
	CELERY_QUEUE=greenlight-bench CHANNEL_PREFIX=greenlight-bench
bench: $(STAMP)
	$(BENCH_ENV) $(PY) manage.py bench_db
	$(BENCH_ENV) $(PY) manage.py bench --json var/bench/bench.json $(BENCH_ARGS)
