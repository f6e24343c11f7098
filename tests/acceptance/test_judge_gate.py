"""judge_gate on hand-made samples: thresholds, the failing part named, parser errors are errors."""

import json

import pytest

from acceptance.choices import Verdict
from acceptance.gates import STORAGE, judge_gate, thresholds_for
from acceptance.parsers.base import Severity
from acceptance.verdicts import SkuFacts
from agent.tool_commands import fio_command

from .sample_files import SAMPLES, read

HGX = SkuFacts(
    gpu_count=8, nic_count=8, nic_line_rate_gbps=400, nvlink_bandwidth_gbps=450, drive_count=8
)
TWO_GPU = SkuFacts(
    gpu_count=2, nic_count=8, nic_line_rate_gbps=400, nvlink_bandwidth_gbps=450, drive_count=8
)


def gpu_health(
    dcgm="dcgm4_level3_pass.json", smi="nvidia_smi_idle_pass.xml", kern="kern_clean.log"
):
    return {"dcgm": read(dcgm), "nvidia-smi": read(smi), "xid": read(kern)}


def test_healthy_gpu_health_passes_and_records_versions():
    verdict = judge_gate("gpu_health", gpu_health(), None, TWO_GPU)
    assert verdict.verdict == Verdict.PASS, verdict.findings
    assert verdict.tool_versions == {
        "nvidia-smi": "550.90.07",
        "driver": "550.90.07",
        "dcgm": "4.2.3",
        "xid": "",
    }
    assert verdict.thresholds_used == {
        "dcgm_level": 3,
        "max_uncorrectable_ecc": 0,
        "max_pending_row_remaps": 0,
    }
    assert set(verdict.metrics) == {"dcgm", "nvidia-smi", "xid"}


def test_dcgm_failure_fails_and_names_gpu_and_serial():
    verdict = judge_gate(
        "gpu_health", gpu_health(dcgm="dcgm4_level3_fail_gpu1.json"), None, TWO_GPU
    )
    assert verdict.verdict == Verdict.FAIL
    assert [(f.part, f.part_serial) for f in verdict.findings] == [("GPU 1", "1654923004478")]


def test_level_1_run_cannot_stand_for_level_3():
    doc = json.loads(read("dcgm4_level3_pass.json"))
    doc["DCGM Diagnostic"]["test_categories"] = doc["DCGM Diagnostic"]["test_categories"][:1]
    level1 = {**gpu_health(), "dcgm": json.dumps(doc)}
    verdict = judge_gate("gpu_health", level1, {"dcgm_level": 3}, TWO_GPU)
    assert verdict.verdict == Verdict.ERROR
    assert "level 1" in verdict.error
    assert judge_gate("gpu_health", level1, {"dcgm_level": 1}, TWO_GPU).verdict == Verdict.PASS


def test_uncorrectable_ecc_fails_unless_the_profile_allows_it():
    outputs = gpu_health(smi="nvidia_smi_ecc_row_remap_pending.xml")
    strict = judge_gate("gpu_health", outputs, None, TWO_GPU)
    assert strict.verdict == Verdict.FAIL
    assert {f.code for f in strict.findings} == {"ecc_uncorrectable", "row_remap_pending"}
    assert {f.part_serial for f in strict.findings} == {"1654923004120"}
    lenient = judge_gate(
        "gpu_health", outputs, {"max_uncorrectable_ecc": 5, "max_pending_row_remaps": 1}, TWO_GPU
    )
    assert lenient.verdict == Verdict.PASS


def test_hardware_xid_fails_gpu_health_naming_the_gpu_through_nvidia_smi():
    verdict = judge_gate("gpu_health", gpu_health(kern="kern_xid79.log"), None, TWO_GPU)
    assert verdict.verdict == Verdict.FAIL
    assert [f.message for f in verdict.findings] == ["GPU 1: XID 79 (fallen off the bus)"]


def test_application_xids_do_not_fail():
    verdict = judge_gate("gpu_health", gpu_health(kern="kern_app_xids_journal.log"), None, TWO_GPU)
    assert verdict.verdict == Verdict.PASS


def test_xid_63_once_passes_but_asks_for_a_reset_and_a_recurrence_fails():
    once = judge_gate("gpu_health", gpu_health(kern="kern_xid63_once.log"), None, TWO_GPU)
    assert once.verdict == Verdict.PASS
    assert once.reset_required == ["GPU 0"]
    again = judge_gate("gpu_health", gpu_health(kern="kern_xid63_recurred.log"), None, TWO_GPU)
    assert again.verdict == Verdict.FAIL


def test_missing_gpu_fails():
    verdict = judge_gate("gpu_health", gpu_health(), None, HGX)
    assert verdict.verdict == Verdict.FAIL
    assert verdict.findings[-1].message == "node: nvidia-smi sees 2 of 8 GPUs"


@pytest.mark.parametrize(
    "broken",
    [{"dcgm": ""}, {"nvidia-smi": "garbage"}, {"xid": read("kern_xid_truncated.log")}],
)
def test_any_unreadable_tool_output_makes_the_gate_an_error(broken):
    verdict = judge_gate("gpu_health", {**gpu_health(), **broken}, None, TWO_GPU)
    assert verdict.verdict == Verdict.ERROR
    assert verdict.error.startswith(next(iter(broken)))


def test_missing_tool_output_is_an_error():
    outputs = gpu_health()
    del outputs["xid"]
    assert judge_gate("gpu_health", outputs, None, TWO_GPU).error == "no xid output"


def test_nccl_judged_on_plateau_not_avg_line():
    healthy = judge_gate("fabric", {"nccl": read("nccl_allreduce_2node_pass.txt")}, None, HGX)
    assert healthy.verdict == Verdict.PASS
    assert healthy.metrics["nccl"]["avg_busbw_gbps"] < 0.92 * 400
    lying = judge_gate("fabric", {"nccl": read("nccl_allreduce_avg_line_lies.txt")}, None, HGX)
    assert lying.verdict == Verdict.FAIL
    assert lying.findings[0].message.startswith("fabric: busbw 59% of line rate")


def test_nccl_threshold_and_line_rate_are_explicit():
    outputs = {"nccl": read("nccl_allreduce_2node_slow_nic.txt")}
    assert judge_gate("fabric", outputs, None, HGX).verdict == Verdict.FAIL
    assert judge_gate("fabric", outputs, {"min_busbw_fraction": 0.5}, HGX).verdict == Verdict.PASS
    slower_sku = SkuFacts(8, 8, 200, 450, 8)
    assert judge_gate("fabric", outputs, None, slower_sku).verdict == Verdict.PASS


def test_nvbandwidth_healthy_passes_at_the_profile_fraction():
    verdict = judge_gate(
        "nvbandwidth", {"nvbandwidth": read("nvbandwidth_h100_pass.txt")}, None, HGX
    )
    assert verdict.verdict == Verdict.PASS
    assert verdict.thresholds_used == {"min_fraction_of_spec": 0.85}
    assert verdict.metrics["nvlink"]["min_fraction"] > 0.85


def test_nvbandwidth_names_the_gpu_with_links_down():
    outputs = {"nvbandwidth": read("nvbandwidth_h100_gpu6_links_down.txt")}
    verdict = judge_gate("nvbandwidth", outputs, None, HGX, inventory={"GPU 6": "SN6"})
    assert verdict.verdict == Verdict.FAIL
    assert [(f.part, f.kind, f.part_serial) for f in verdict.findings] == [
        ("GPU 6", "nvlink", "SN6")
    ]


def test_nvbandwidth_missing_pair_is_named_as_a_pair():
    verdict = judge_gate(
        "nvbandwidth", {"nvbandwidth": read("nvbandwidth_h100_missing_pair.txt")}, None, HGX
    )
    assert verdict.verdict == Verdict.FAIL
    assert [f.message.split(":")[0] for f in verdict.findings] == ["GPU 2 <-> GPU 5"]


def test_nvbandwidth_needs_a_spec():
    no_spec = SkuFacts(8, 8, 400, 0, 8)
    verdict = judge_gate(
        "nvbandwidth", {"nvbandwidth": read("nvbandwidth_h100_pass.txt")}, None, no_spec
    )
    assert verdict.verdict == Verdict.ERROR


def test_storage_pass_and_sla():
    assert (
        judge_gate("storage", {"fio": read("fio_8x_nvme_pass.json")}, None, HGX).verdict
        == Verdict.PASS
    )
    slow = judge_gate(
        "storage", {"fio": read("fio_nvme2_below_sla.json")}, None, HGX, {"nvme2n1": "S6X2"}
    )
    assert slow.verdict == Verdict.FAIL
    assert [(f.part, f.part_serial) for f in slow.findings] == [("nvme2n1", "S6X2")]
    assert "read 3390 MB/s, below the SLA of 6000 MB/s" in slow.findings[0].message


def test_storage_eio_names_the_drive():
    verdict = judge_gate("storage", {"fio": read("fio_nvme5_eio.json")}, None, HGX)
    assert verdict.verdict == Verdict.FAIL
    assert {f.part for f in verdict.findings} == {"nvme5n1"}


def test_burn_in_gpu_burn_exit_0_but_faulty_fails():
    outputs = {"xid": read("kern_clean.log"), "nvidia-smi": read("nvidia_smi_load_swpowercap.xml")}
    ok = judge_gate("burn_in", {**outputs, "gpu-burn": read("gpu_burn_8x_pass.txt")}, None, HGX)
    assert ok.verdict == Verdict.PASS
    faulty = read("gpu_burn_gpu2_faulty_exit0.txt")
    bad = judge_gate("burn_in", {**outputs, "gpu-burn": faulty}, None, HGX)
    assert bad.verdict == Verdict.FAIL
    assert [f.part for f in bad.findings] == ["GPU 2"]


def test_burn_in_sw_power_cap_passes_hw_slowdown_and_heat_fail():
    outputs = {"gpu-burn": read("gpu_burn_8x_pass.txt"), "xid": read("kern_clean.log")}
    capped = judge_gate(
        "burn_in", {**outputs, "nvidia-smi": read("nvidia_smi_load_swpowercap.xml")}, None, HGX
    )
    assert capped.verdict == Verdict.PASS
    slowed = judge_gate(
        "burn_in", {**outputs, "nvidia-smi": read("nvidia_smi_load_hw_slowdown.xml")}, None, HGX
    )
    assert slowed.verdict == Verdict.FAIL
    assert {f.part for f in slowed.findings} == {"GPU 1"}
    hot = judge_gate(
        "burn_in", {**outputs, "nvidia-smi": read("nvidia_smi_r525_thermal.xml")}, None, HGX
    )
    assert {f.code for f in hot.findings} == {"throttle", "too_hot"}


def test_unknown_or_untooled_gate_is_an_error():
    assert judge_gate("nonsense", {}, None, HGX).verdict == Verdict.ERROR
    assert judge_gate("attestation", {}, None, HGX).verdict == Verdict.ERROR


def test_profile_thresholds_override_defaults():
    assert thresholds_for("fabric", {"min_busbw_fraction": 0.9}) == {
        "min_busbw_fraction": 0.9,
        "min_rail_fraction": 0.9,
    }
    assert thresholds_for("storage", None) == {
        "min_read_mbps": 6000,
        "min_write_mbps": 3000,
        "fio_runtime_s": 60,
        "fio_iodepth": 32,
    }


def test_the_profile_sets_how_long_fio_runs():
    """The profile's fio_runtime_s reaches the agent's fio command, and the wait allows for it."""
    assert STORAGE.runs is not None
    (tool,) = STORAGE.runs(None, STORAGE.thresholds_with({"fio_runtime_s": 15, "fio_iodepth": 1}))
    assert (tool["runtime_s"], tool["iodepth"], tool["duration_s"]) == (15, 1, 30)
    (tool,) = STORAGE.runs(None, STORAGE.thresholds_with(None))
    assert (tool["runtime_s"], tool["iodepth"], tool["duration_s"]) == (60, 32, 120)
    command = fio_command([("/dev/nvme0n1", True)], 15, 1)
    assert "--runtime=15" in command and "--iodepth=1" in command


def test_gpu_health_reads_nvswitch_and_pcie_faults_from_the_same_kernel_log():
    real = SAMPLES / "real"
    kernel_log = "\n".join(
        (real / name).read_text()
        for name in (
            "sxid_gpud338_dmesg_iso_12028.log",
            "aer_lkml_latitude_syslog_corrected_nvme.log",
        )
    )
    outputs = {
        "dcgm": read("dcgm4_level3_pass.json"),
        "nvidia-smi": read("nvidia_smi_idle_pass.xml"),
        "xid": kernel_log,
    }
    verdict = judge_gate("gpu_health", outputs, None, HGX)
    assert verdict.verdict == Verdict.FAIL
    by_part = {f.part: f.severity for f in verdict.findings}
    assert by_part["NVSwitch 1 (PCI 0000:84:00.0)"] == Severity.CRITICAL
    assert by_part["PCIe 0000:02:00.0 (nvme)"] == Severity.WARNING
    assert verdict.metrics["xid"]["nvswitch_events"][0]["sxid"] == 12028
