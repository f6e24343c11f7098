"""/metrics: fleet-wide numbers computed from the database at scrape time."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_nodes_per_state_and_sku(fleet, client):
    samples = scrape(client)
    sku = "hgx-h100-8gpu"
    for state in ("awaiting_approval", "quarantined", "enrolled", "in_service"):
        assert samples[("greenlight_nodes", (("sku", sku), ("state", state)))] == 1


def test_phase_durations_histogram(fleet, client):
    samples = scrape(client)
    labels = (("phase", "preflight"), ("status", "done"))
    assert samples[("greenlight_phase_duration_seconds_count", labels)] == 2
    assert samples[("greenlight_phase_duration_seconds_sum", labels)] == 84.0
    le = lambda b: (("le", b), *labels)  # noqa: E731
    assert samples[("greenlight_phase_duration_seconds_bucket", le("30.0"))] == 0
    assert samples[("greenlight_phase_duration_seconds_bucket", le("60.0"))] == 2
    firmware = (("le", "900.0"), ("phase", "bmc_firmware"), ("status", "done"))
    assert ("greenlight_phase_duration_seconds_bucket", firmware) not in samples  # no such bucket
    fw = (("phase", "bmc_firmware"), ("status", "done"))
    assert samples[("greenlight_phase_duration_seconds_sum", fw)] == 2 * 900.0


def test_gate_failures_by_gate_and_part(fleet, client):
    samples = scrape(client)
    assert (
        samples[("greenlight_gate_failures_total", (("gate", "gpu_health"), ("part", "GPU 3")))]
        == 1
    )
    assert samples[("greenlight_gate_results", (("gate", "attestation"), ("verdict", "pass")))] == 2


def test_bmc_errors_by_kind(fleet, client):
    samples = scrape(client)
    assert samples[("greenlight_bmc_errors_total", (("kind", "bmc_timeout"),))] == 2
    assert samples[("greenlight_bmc_errors_total", (("kind", "bmc_auth"),))] == 1


def test_token_required_when_configured(fleet, client, settings):
    settings.METRICS_TOKEN = "scrape-me"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    samples = scrape(client, HTTP_AUTHORIZATION="Bearer scrape-me")
    assert samples


def test_scrape_costs_a_fixed_number_of_queries(fleet, client, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        scrape(client)
