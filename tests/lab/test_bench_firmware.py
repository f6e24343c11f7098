"""The firmware-wave benchmark's accounting (issue 36): its peaks count what overlapped, and a
small real run through the rollout keeps every site under its cap, every BMC at one mutating act
at a time, and brings every BMC to the new image."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lab.bench_firmware import NEW_BMC, FirmwareBenchConfig, placement, run_firmware_bench
from lab.bench_firmware_accounting import (
    Row,
    Span,
    caps_honoured,
    peak,
    peaks_by_group,
    rounds,
    waves,
)
from tests.support.own_queue import own_queue

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_peaks_count_overlap_per_site_and_a_handover_is_not_overlap():
    spans = [
        Span("a", _at(0), _at(10)),
        Span("a", _at(10), _at(20)),  # starts as the one before ends: a handover
        Span("a", _at(5), _at(15)),
        Span("b", _at(0), _at(30)),
        Span("b", _at(1), _at(2)),
        Span("b", _at(1.5), _at(3)),
    ]
    assert peak(spans) == 4  # at 1.5 s: a's first and b's three
    # a's: two at most; counting the handover at 10 s as overlap would make it three.
    assert peaks_by_group(spans) == {"a": 2, "b": 3}
    assert caps_honoured({"a": 2, "b": 3}, 3) and not caps_honoured({"a": 2, "b": 3}, 2)
    assert caps_honoured({"a": 9}, 0)  # no cap


def test_waves_are_numbered_from_one_with_their_outcomes_sites_and_lab_span():
    rows = [
        Row(0, "a", "done", _at(0), _at(4)),
        Row(1, "a", "done", _at(5), _at(9)),
        Row(1, "b", "failed", _at(5), _at(7)),
        Row(2, "b", "waiting", None, None),
    ]
    assert waves(rows, speed=10, site_cap=1, concurrency=4) == [
        {"wave": 1, "nodes": 1, "done": 1, "by_site": {"a": 1}, "rounds": 1, "lab_s": 40.0},
        {"wave": 2, "nodes": 2, "done": 1, "failed": 1, "by_site": {"a": 1, "b": 1},
         "rounds": 1, "lab_s": 40.0},
        {"wave": 3, "nodes": 1, "waiting": 1, "by_site": {"b": 1}, "rounds": 1, "lab_s": None},
    ]  # fmt: skip


def test_a_waves_rounds_are_its_busiest_site_through_the_cap_or_all_through_the_concurrency():
    assert rounds({"a": 92, "b": 68}, site_cap=16, concurrency=48) == 6
    assert rounds({"a": 92, "b": 68}, site_cap=0, concurrency=48) == 4
    assert rounds({"a": 10, "b": 10}, site_cap=16, concurrency=5) == 4


def test_nodes_are_placed_in_equal_blocks_per_site_in_racks_of_32():
    assert placement(0, 741, 3) == ("fw-site-1", "fw-1-r01", 1)
    assert placement(246, 741, 3) == ("fw-site-1", "fw-1-r08", 23)
    assert placement(247, 741, 3) == ("fw-site-2", "fw-2-r01", 1)
    assert placement(740, 741, 3) == ("fw-site-3", "fw-3-r08", 23)


@pytest.mark.timeout(600)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_small_wave_keeps_each_site_under_its_cap_and_each_bmc_at_one_act(tmp_path, settings):
    # Wave 2 holds five nodes: two of site 1, three of site 2. Uncapped, site 2 would have all
    # three in flight at once (the concurrency allows six); capped at two it never does.
    config = FirmwareBenchConfig(
        nodes=6, sites=2, site_cap=2, concurrency=6, canary=1, wave_growth=5, speed=40,
        workers=1, worker_threads=8, enroll_concurrency=4, timeout_s=400,
    )  # fmt: skip
    with own_queue(settings):
        result = run_firmware_bench(config, tmp_path)
    assert result["finished"], result
    assert (result["done"], result["failed"]) == (6, 0)
    assert [(w["wave"], w["nodes"]) for w in result["waves"]] == [(1, 1), (2, 5)]
    assert result["in_flight_peak"]["by_site"] == {"fw-site-1": 2, "fw-site-2": 2}
    assert result["caps_honoured"]
    assert max(result["bmc_updates_peak"]["by_site"].values()) <= 2
    assert result["bmc_acts"] == {
        "max_concurrent_per_bmc": 1,
        "bmcs_flashed": 6,
        "bmcs_on_new_image": 6,
    }
    assert result["plan"] == ["preflight", "power_on", "bmc_firmware"]
    assert result["bmc_to"] == NEW_BMC and result["makespan_lab_s"] > 0
