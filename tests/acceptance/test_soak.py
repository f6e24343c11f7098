"""The burn-in soak: telemetry through the run, early stop on a hardware XID."""

from acceptance.choices import Verdict
from acceptance.soak import judge_soak
from lab.tool_outputs import kernel_log_xid, make_node, soak_samples

NODE = make_node("r7-u05", seed=5)
THRESHOLDS = {"soak_hours": 72, "max_gpu_temp_c": 87, "sample_interval_s": 1800}


def soak(faults=None, hours=72):
    samples = soak_samples(NODE, faults, duration_s=hours * 3600, interval_s=1800)
    log = kernel_log_xid(NODE, faults, phase="soak", soak_s=hours * 3600)
    return judge_soak(samples, log, THRESHOLDS, NODE.bus_map())


def test_healthy_soak_passes_with_power_capping():
    verdict = soak()
    assert verdict.verdict == Verdict.PASS, verdict.findings
    assert verdict.stopped_at_sample is None
    assert verdict.metrics["samples"] == 145
    assert max(verdict.metrics["max_temp_c"].values()) <= 87


def test_marginal_gpu_stops_the_soak_at_the_xid():
    verdict = soak({"name": "marginal_gpu", "component": "GPU 3", "after_s": 30 * 3600})
    assert verdict.verdict == Verdict.FAIL
    assert verdict.stopped_at_sample == 60  # 30 h at one sample per half hour
    assert "GPU 3: XID 79 (fallen off the bus)" in [f.message for f in verdict.findings]
    assert {f.part_serial for f in verdict.findings} == {NODE.gpu_serials[3]}


def test_xid_is_caught_midway_before_the_gpu_drops_out():
    faults = {"name": "marginal_gpu", "component": "GPU 3", "after_s": 10 * 3600}
    samples = soak_samples(NODE, None, duration_s=12 * 3600, interval_s=1800)
    log = kernel_log_xid(NODE, faults, phase="soak", soak_s=12 * 3600)
    verdict = judge_soak(samples, log, THRESHOLDS, NODE.bus_map())
    assert verdict.verdict == Verdict.FAIL
    assert verdict.stopped_at_sample == 20


def test_thermal_throttle_fails_sw_power_cap_does_not():
    verdict = soak({"name": "thermal_throttle", "component": "GPU 6"})
    assert verdict.verdict == Verdict.FAIL
    assert {f.part for f in verdict.findings} == {"GPU 6"}
    assert {f.code for f in verdict.findings} == {"throttle", "too_hot"}
    assert verdict.stopped_at_sample is None


def test_unfinished_soak_is_not_a_pass():
    verdict = soak(hours=10)
    assert verdict.verdict == Verdict.ERROR
    assert verdict.error == "soak incomplete: 10.0 of 72 hours"


def test_unreadable_kernel_log_is_an_error():
    samples = soak_samples(NODE, None, duration_s=3600, interval_s=1800)
    assert judge_soak(samples, "", THRESHOLDS).verdict == Verdict.ERROR
    assert judge_soak([], "[ 1.0] kernel: ok", THRESHOLDS).verdict == Verdict.ERROR
