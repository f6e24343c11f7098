# Two commands do all set-up: `make demo` and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Parallel test processes; 2 fits the 2-core CI machine.
TEST_JOBS ?= 2

.PHONY: demo test bench bench-tiers bench-intake bench-firmware lint install

$(STAMP): requirements.txt requirements-lab.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) manage.py demo

# The gates run in lab mode (common/lab_mode.py): the lab app and its migrations are checked
# too, and a checkout with no production environment passes.
test: $(STAMP)
	GREENLIGHT_LAB_MODE=1 $(PY) manage.py makemigrations --check --dry-run
	GREENLIGHT_LAB_MODE=1 $(PY) manage.py check
	# The slowest tests named at the end: where the CI time goes.
	$(PY) -m pytest -n $(TEST_JOBS) --dist worksteal -m "not vm" --durations=30 $(PYTEST_ARGS)
	# The VM tier alone, after the rest: its emulated NVMe stalls when the suite shares its cores.
	$(PY) -m pytest -m vm $(PYTEST_ARGS) || test $$? -eq 5

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) .ci/typecheck

# The benchmark measures the production set-up: PostgreSQL and a real Redis (the machine's own
# unless BENCH_DATABASE_URL / BENCH_REDIS_URL say otherwise). Its database is dropped and created.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/greenlight_bench
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/7
BENCH_ENV = DATABASE_URL=$(BENCH_DATABASE_URL) REDIS_URL=$(BENCH_REDIS_URL) \
	CELERY_QUEUE=greenlight-bench CHANNEL_PREFIX=greenlight-bench
bench: $(STAMP)
	$(BENCH_ENV) $(PY) manage.py bench_db
	$(BENCH_ENV) $(PY) manage.py bench --json var/bench/bench.json $(BENCH_ARGS)

# Scale tiers: one benchmark per size in TIERS, at one speed and soak (BENCH_ARGS, e.g.
# "--speed 4 --soak-hours 0.25"), then throughput, CPU a node and p99 against the size. The first
# tier calibrates; the others reuse its one-node time (same commit, speed and soak, or refused).
TIERS ?= 741 2000 5000
bench-tiers: $(STAMP)
	reuse=; for nodes in $(TIERS); do \
	  $(BENCH_ENV) $(PY) manage.py bench_db && \
	  $(BENCH_ENV) $(PY) manage.py bench --nodes $$nodes --json var/bench/bench-$$nodes.json \
	    --plot var/bench/states-$$nodes.png --calibration var/bench/tiers-calibration.json \
	    --timeout 86400 $$reuse $(BENCH_ARGS) || exit 1; \
	  reuse=--reuse-calibration; \
	done
	$(PY) manage.py bench_tiers $(foreach n,$(TIERS),var/bench/bench-$(n).json)

# Intake: N lab BMCs enrolled over Redfish at a concurrency (INTAKE_ARGS="--nodes 5000").
bench-intake: $(STAMP)
	$(BENCH_ENV) $(PY) manage.py bench_db
	$(BENCH_ENV) $(PY) manage.py bench_intake --json var/bench/intake.json $(INTAKE_ARGS)

# A firmware wave: a newer BMC image over N lab switch trays in S sites, in waves under a per-site
# cap (FIRMWARE_ARGS="--nodes 741 --sites 3 --site-cap 16"); makespan and BMC concurrency reached.
bench-firmware: $(STAMP)
	$(BENCH_ENV) $(PY) manage.py bench_db
	$(BENCH_ENV) $(PY) manage.py bench_firmware --json var/bench/firmware.json $(FIRMWARE_ARGS)
