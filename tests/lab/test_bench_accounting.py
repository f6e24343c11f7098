"""What the benchmark counts besides Greenlight's own processes (issue 32): each web endpoint's
requests, queries and CPU, and the CPU of the PostgreSQL and Redis a site pays for too."""

from __future__ import annotations

import gc
import time

import pytest
from django.db import connection
from django.test import RequestFactory
from django.urls import resolve

from common import instrumentation
from lab.bench import datastore_cpu, endpoints_logged, gc_logged


@pytest.mark.django_db
def test_each_endpoint_is_counted_by_its_url_name(tmp_path, monkeypatch):
    monkeypatch.setenv("GREENLIGHT_QUERY_LOG_DIR", str(tmp_path))

    def answer(request):
        request.resolver_match = resolve(request.path)
        with connection.cursor() as cursor:
            for _ in range(3):
                cursor.execute("SELECT 1")
        return "answered"

    middleware = instrumentation.QueryCountMiddleware(answer)
    for _ in range(4):
        assert middleware(RequestFactory().post("/agent/v1/poll")) == "answered"
    instrumentation._flush("web", force=True)

    poll = endpoints_logged(tmp_path, nodes=2)["agent_api:poll"]
    assert poll["requests_per_node"] >= 2.0  # other tests in this process may have added some
    assert poll["queries_per_request"] == 3.0
    assert poll["cpu_ms_per_request"] > 0


@pytest.mark.django_db
def test_a_request_that_says_why_is_counted_under_its_reason_too(tmp_path, monkeypatch):
    monkeypatch.setenv("GREENLIGHT_QUERY_LOG_DIR", str(tmp_path))

    def answer(request):
        request.resolver_match = resolve(request.path)
        instrumentation.detail("quiet phase")
        return "answered"

    middleware = instrumentation.QueryCountMiddleware(answer)
    for _ in range(3):
        middleware(RequestFactory().post("/agent/v1/poll"))
    instrumentation._flush("web", force=True)

    endpoints = endpoints_logged(tmp_path, nodes=1)
    assert endpoints["agent_api:poll[quiet phase]"]["requests_per_node"] >= 3.0
    assert endpoints["agent_api:poll"]["requests_per_node"] >= 3.0


@pytest.mark.django_db
def test_a_workers_looks_are_counted_by_phase(tmp_path, monkeypatch):
    monkeypatch.setenv("GREENLIGHT_QUERY_LOG_DIR", str(tmp_path))
    with instrumentation.counting("worker"):
        for _ in range(3):
            with instrumentation.work("look:test_phase"), connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.execute("SELECT 2")
    instrumentation._flush("worker", force=True)

    look = endpoints_logged(tmp_path, nodes=1, kind="work")["look:test_phase"]
    assert look["requests_per_node"] >= 3.0
    assert look["queries_per_request"] == 2.0


def test_the_garbage_collectors_time_is_counted(tmp_path, monkeypatch):
    monkeypatch.setenv("GREENLIGHT_QUERY_LOG_DIR", str(tmp_path))
    instrumentation.time_gc()
    instrumentation.time_gc()  # once per process, however often asked
    assert gc.callbacks.count(instrumentation._time_gc) == 1
    gc.collect()
    instrumentation._flush("worker", force=True)

    counted = gc_logged(tmp_path, nodes=1)["worker"]
    assert counted["collections"] >= 1 and counted["full"] >= 1
    assert counted["s_per_node"] > 0


def test_postgres_cpu_counts_backends_that_have_exited():
    psycopg = pytest.importorskip("psycopg")
    try:
        conn = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres")
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL on this machine")
    before = datastore_cpu().get("postgres", 0.0)
    with conn:
        conn.execute("SELECT sum(i) FROM generate_series(1, 4000000) AS i").fetchone()
    conn.close()  # its backend exits: only the postmaster's children times still hold its CPU
    for _ in range(50):  # the postmaster reaps the backend a moment later
        used = datastore_cpu()["postgres"] - before
        if used >= 0.1:
            break
        time.sleep(0.1)
    assert used >= 0.1, used
