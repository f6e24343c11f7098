"""The benchmark's yardstick: fixed work timed in thread CPU time through a run, and CPU a node in
units of it, so that runs at different machine speeds compare."""

from __future__ import annotations

import collections
import threading

import pytest

from lab import bench_yardstick
from lab.bench_yardstick import Yardstick, in_work_units, steal_share


def test_the_work_is_fixed_and_timed_in_this_threads_cpu():
    assert bench_yardstick.work() == bench_yardstick.work() > 0
    # A thread that only waits meanwhile adds nothing to the timing (thread CPU time).
    waiter = threading.Thread(target=threading.Event().wait, args=(0.2,))
    waiter.start()
    assert 0 < bench_yardstick.time_work_ms() < 1000
    waiter.join()


def test_a_run_is_timed_at_its_start_and_every_interval_until_it_stops():
    yardstick = Yardstick(interval_s=0.05)
    yardstick.start()
    threading.Event().wait(0.3)
    yardstick.stop()
    summary = yardstick.summary()
    assert summary["timings"] == len(yardstick.samples_ms) >= 3
    low, high = summary["work_cpu_ms_p10_p90"]
    assert 0 < low <= summary["work_cpu_ms"] <= high
    assert summary["steal_share"] is None or 0 <= summary["steal_share"] < 1


def test_cpu_in_units_of_the_work_and_the_stolen_share():
    # 2.0 s of CPU a node where the work took 5 ms: 400 of its timings.
    assert in_work_units(2.0, {"work_cpu_ms": 5.0}) == 400.0
    assert in_work_units(2.0, {"work_cpu_ms": None}) is None
    Times = collections.namedtuple("Times", "user system idle steal")
    assert steal_share(Times(10, 5, 80, 5), Times(40, 10, 120, 30)) == pytest.approx(0.25)
    assert steal_share(Times(1, 1, 1, 0), Times(1, 1, 1, 0)) is None
    NoSteal = collections.namedtuple("NoSteal", "user system idle")
    assert steal_share(NoSteal(1, 1, 1), NoSteal(2, 2, 2)) is None


def test_an_idle_yardstick_reports_nothing_measured():
    summary = Yardstick().summary()
    assert summary == {
        "work_cpu_ms": None,
        "work_cpu_ms_p10_p90": None,
        "timings": 0,
        "steal_share": None,
    }
