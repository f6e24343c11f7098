"""The benchmark command end to end on a small deployment: its numbers, its JSON, its plot."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from fleet.choices import NodeState
from lab.bench import state_series

REQUIRED_KEYS = {
    "nodes", "healthy_first_pass_rate", "faults_injected", "faults_caught", "healthy_failed",
    "makespan_lab_s", "single_node_lab_s", "makespan_ratio", "cpu_s_per_node", "tasks_per_s",
    "queries_per_phase", "worker_peak_rss_mb", "event_latency_ms", "speed", "workers", "seed",
    "machine",
}  # fmt: skip


# Two racks through real processes, after a five-node calibration rack: minutes on 2 cores.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_bench_measures_a_small_deployment_and_writes_json_and_plot(tmp_path):
    out = io.StringIO()
    call_command(
        "bench", nodes=6, racks=2, speed=400, timeout=600, json=str(tmp_path / "bench.json"),
        plot=str(tmp_path / "states.png"), calibration=str(tmp_path / "calibration.json"),
        stdout=out,
    )  # fmt: skip
    data = json.loads((tmp_path / "bench.json").read_text())
    assert REQUIRED_KEYS <= set(data)
    assert data["finished"] is True
    assert (data["nodes"], data["racks"], data["speed"], data["workers"]) == (6, 2, 400, 2)
    # Three of six nodes carry a hardware fault (marginal GPU, slow NIC, failing NVMe update).
    assert data["faults_injected"] == 3
    assert data["faults_caught"] == 3, data["failed_nodes"]
    assert data["healthy_failed"] == 0 and data["healthy_first_pass_rate"] == 1.0
    assert data["makespan_ratio"] == round(data["makespan_lab_s"] / data["single_node_lab_s"], 3)
    assert data["single_node_lab_s"] > 0 and data["makespan_lab_s"] > 0
    for key in ("cpu_s_per_node", "tasks_per_s", "queries_per_phase", "worker_peak_rss_mb"):
        assert data[key] > 0, key
    by_process = data["cpu_s_per_node_by_process"]
    assert all(by_process[role] > 0 for role in ("web", "agent_api", "workers", "lab"))
    assert data["cpu_s_per_node"] == pytest.approx(
        by_process["web"] + by_process["agent_api"] + by_process["workers"], abs=0.01
    )
    # Issue 32: the calibration is stored with its commit; each endpoint's cost is reported.
    calibration = json.loads((tmp_path / "calibration.json").read_text())
    assert calibration["single_node_lab_s"] == data["single_node_lab_s"]
    assert calibration["commit"] == data["commit"] == data["calibration"]["commit"]
    poll = data["endpoints"]["agent_api:poll"]
    assert poll["requests_per_node"] > 0 and poll["cpu_ms_per_request"] > 0
    assert data["endpoints"]["agent_api:checkin"]["queries_per_request"] > 0
    assert data["gc"]["worker"]["collections"] > 0
    # Polls are also counted by why they came when they did.
    assert any(name.startswith("agent_api:poll[") for name in data["endpoints"])
    # And where the workers' CPU goes: per task, and per phase's looks within the steps.
    work = data["worker_work"]
    steps = work["provisioning.tasks.advance_run"]
    assert steps["requests_per_node"] > 0 and steps["cpu_ms_per_request"] > 0
    looks = {name: entry for name, entry in work.items() if name.startswith("look:")}
    assert {"look:power_on", "look:gate:gpu_health"} <= set(looks)
    assert sum(e["cpu_s_per_node"] for e in looks.values()) <= steps["cpu_s_per_node"] + 0.001
    assert data["cpu_s_per_node_with_datastores"] >= data["cpu_s_per_node"]
    latency = data["event_latency_ms"]
    assert latency["events"] > 0 and 0 < latency["p50"] <= latency["p99"]
    assert latency["disconnects"] == 0
    assert data["machine"]["cpus"] >= 1
    # The machine's speed meanwhile, and CPU a node in units of the yardstick's work.
    assert data["machine_speed"]["timings"] >= 1 and data["machine_speed"]["work_cpu_ms"] > 0
    assert data["cpu_work_units_per_node"] == pytest.approx(
        data["cpu_s_per_node"] * 1e3 / data["machine_speed"]["work_cpu_ms"], rel=0.01
    )
    # Issue 32's tiers: nodes brought to awaiting_approval an hour, and whether the size fit.
    assert data["throughput"]["nodes_to_awaiting_approval"] == 3
    assert data["throughput"]["per_real_hour"] > data["throughput"]["per_lab_hour"] > 0
    memory = data["memory"]
    assert memory["peak_total_rss_mb"] >= data["worker_peak_rss_mb"] > 0
    assert set(memory["peak_rss_mb_by_process"]) == {"web", "agent_api", "workers", "lab"}
    assert 0 < memory["machine_available_min_mb"] < memory["machine_total_mb"]
    assert (tmp_path / "states.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "makespan_ratio" in out.getvalue(), "the numbers are printed too"


def test_state_series_counts_each_node_once():
    events = [
        (0.0, NodeState.ENROLLED, NodeState.PROVISIONING),
        (1.0, NodeState.ENROLLED, NodeState.PROVISIONING),
        (2.0, NodeState.PROVISIONING, NodeState.VALIDATING),
        (3.0, NodeState.VALIDATING, NodeState.AWAITING_APPROVAL),
    ]
    series = state_series(2, events)
    final = {state: points[-1][1] for state, points in series.items()}
    assert final[NodeState.ENROLLED] == 0
    assert final[NodeState.PROVISIONING] == 1
    assert final[NodeState.AWAITING_APPROVAL] == 1
    assert all(count >= 0 for points in series.values() for _, count in points)


def test_the_sampler_counts_the_cpu_a_server_spends_in_its_children(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    from types import SimpleNamespace

    from lab.bench import ResourceSampler

    # A master that only waits, and a child that works, as gunicorn's master and its worker.
    started = tmp_path / "child-done"
    child = f"import time; t=time.process_time(); exec('while time.process_time()-t<0.5: pass'); open({str(started)!r},'w').close(); time.sleep(60)"
    master = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess,sys; subprocess.run([sys.executable,'-c',{child!r}])"],
        start_new_session=True,
    )  # fmt: skip
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        sampler = ResourceSampler(SimpleNamespace(pid=idle.pid), master, [idle])
        sampler.start()
        while not started.exists():
            assert master.poll() is None
            time.sleep(0.05)
        sampler.stop()
        assert sampler.cpu_s("agent_api") >= 0.4
    finally:
        os.killpg(master.pid, signal.SIGKILL)  # the child too
        idle.kill()
        for proc in (master, idle):
            proc.wait()
