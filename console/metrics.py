"""Prometheus metrics, computed from the database at scrape time.

The database is the source of truth and any number of web processes may answer a scrape, so
nothing is counted in process memory: a custom collector runs a handful of aggregate queries
per scrape instead. Gauges and counters below are therefore fleet-wide, whichever process
answers.

Access: if settings.METRICS_TOKEN is set, a scrape must send `Authorization: Bearer <token>`;
if it is empty, /metrics is open (the usual set-up on a management network).
"""

from __future__ import annotations

import hmac
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from acceptance.choices import Verdict
from acceptance.models import GateResult
from fleet.choices import EventKind
from fleet.models import Event, Node
from provisioning.boot import ipxe_guard
from provisioning.models import PhaseRecord, Run
from provisioning.site_work import site_service

# Phase durations range from seconds (a skipped phase) to hours (a firmware flash, a soak).
PHASE_BUCKETS_S = (1, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400)
BMC_ERROR_EVENT_KINDS = (EventKind.PHASE_FAILED, EventKind.PHASE_RETRY)


class GreenlightCollector:
    """Nodes per state and SKU, phase durations, gate results and failures, BMC errors."""

    def collect(self) -> Iterator[Metric]:
        yield self.nodes()
        yield self.runs()
        yield self.phase_durations()
        yield from self.gates()
        yield self.bmc_errors()
        yield from self.boot_requests()
        yield self.site_workers()

    def nodes(self) -> Metric:
        family = GaugeMetricFamily(
            "greenlight_nodes", "Nodes per lifecycle state and SKU", labels=["state", "sku"]
        )
        rows = Node.objects.values("state", "sku__name").annotate(n=Count("id")).order_by()
        for row in rows:
            family.add_metric([row["state"], row["sku__name"]], row["n"])
        return family

    def runs(self) -> Metric:
        family = GaugeMetricFamily(
            "greenlight_runs", "Runs per kind and status", labels=["kind", "status"]
        )
        for row in Run.objects.values("kind", "status").annotate(n=Count("id")).order_by():
            family.add_metric([row["kind"], row["status"]], row["n"])
        return family

    def phase_durations(self) -> Metric:
        duration = ExpressionWrapper(
            F("finished_at") - F("started_at"), output_field=DurationField()
        )
        buckets = {
            f"le_{b}": Count("id", filter=Q(duration__lte=timedelta(seconds=b)))
            for b in PHASE_BUCKETS_S
        }
        rows = (
            PhaseRecord.objects.filter(started_at__isnull=False, finished_at__isnull=False)
            .annotate(duration=duration)
            .values("phase", "status")
            .annotate(n=Count("id"), total=Sum("duration"), **buckets)
            .order_by()
        )
        family = HistogramMetricFamily(
            "greenlight_phase_duration_seconds",
            "Duration of finished phase records per phase and outcome",
            labels=["phase", "status"],
        )
        for row in rows:
            cumulative = [(str(float(b)), row[f"le_{b}"]) for b in PHASE_BUCKETS_S]
            cumulative.append(("+Inf", row["n"]))
            total = row["total"]
            family.add_metric(
                [row["phase"], row["status"]],
                cumulative,
                sum_value=total.total_seconds() if total is not None else 0.0,
            )
        return family

    def gates(self) -> Iterator[Metric]:
        results = GaugeMetricFamily(
            "greenlight_gate_results",
            "Gate results per gate and verdict",
            labels=["gate", "verdict"],
        )
        for row in GateResult.objects.values("gate", "verdict").annotate(n=Count("id")).order_by():
            results.add_metric([row["gate"], row["verdict"]], row["n"])
        yield results

        # Findings are a JSON list; failures are few, so they are tallied here rather than in SQL.
        tally: Counter[tuple[str, str]] = Counter()
        failing = GateResult.objects.filter(verdict=Verdict.FAIL).values_list("gate", "findings")
        for gate, findings in failing.iterator(chunk_size=1000):
            parts = {str(f.get("part", "")) for f in findings or [] if isinstance(f, dict)}
            for part in parts or {""}:
                tally[(gate, part)] += 1
        failures = CounterMetricFamily(
            "greenlight_gate_failures",
            "Failed gate results per gate and failing part (as the finding names it)",
            labels=["gate", "part"],
        )
        for (gate, part), n in sorted(tally.items()):
            failures.add_metric([gate, part], n)
        yield failures

    def bmc_errors(self) -> Metric:
        family = CounterMetricFamily(
            "greenlight_bmc_errors",
            "Phase failures and retries per error kind (event data error_kind)",
            labels=["kind"],
        )
        rows = (
            Event.objects.filter(kind__in=BMC_ERROR_EVENT_KINDS, data__has_key="error_kind")
            .values("data__error_kind")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            family.add_metric([str(row["data__error_kind"])], row["n"])
        return family

    def boot_requests(self) -> Iterator[Metric]:
        # Counted in the cache (Redis, shared by every web process) as they happen: a MAC scan
        # writes no row per guess (provisioning.boot.ipxe_guard).
        totals = ipxe_guard.totals()
        misses = CounterMetricFamily(
            "greenlight_ipxe_misses",
            "iPXE script requests answered with no script (unknown MAC, or no armed boot)",
        )
        misses.add_metric([], totals["misses"])
        yield misses
        throttled = CounterMetricFamily(
            "greenlight_ipxe_throttled",
            "iPXE script requests refused with 429: their source missed too often this minute",
        )
        throttled.add_metric([], totals["throttled"])
        yield throttled

    def site_workers(self) -> Metric:
        family = GaugeMetricFamily(
            "greenlight_site_workers",
            "Live workers per site that has its own (its runs wait while this is 0)",
            labels=["site"],
        )
        for service in site_service():
            family.add_metric([service.site], service.live)
        return family


def render_metrics() -> bytes:
    """The exposition text of every Greenlight metric."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GreenlightCollector())
    return generate_latest(registry)


def _authorized(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if not token:
        return True
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


def metrics_view(request: HttpRequest) -> HttpResponse:
    """GET /metrics for Prometheus."""
    if not _authorized(request):
        response = HttpResponse(
            "metrics need a bearer token\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(render_metrics(), content_type=CONTENT_TYPE_LATEST)
