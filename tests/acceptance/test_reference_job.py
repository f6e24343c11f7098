"""The end-to-end reference job: the agent runs it in-band (a real PyTorch training run on this
machine's CPU), its own output format is parsed, and the gate holds it to the profile's MFU."""

import asyncio

import pytest

from acceptance.choices import Verdict
from acceptance.gates import REFERENCE_JOB, judge_gate
from acceptance.parsers import reference_job
from acceptance.verdicts import SkuFacts
from agent.hardware import SystemHardware
from lab import tool_outputs as lab

CPU_NODE = SkuFacts(
    gpu_count=0, nic_count=0, nic_line_rate_gbps=0, nvlink_bandwidth_gbps=0, drive_count=0
)
HGX = SkuFacts(8, 8, 400, 450, 8)
# A peak no two-core CPU reaches, so the measured MFU lies strictly between 0 and 1.
CPU_PEAK = 1.0


@pytest.fixture(scope="module")
def cpu_run() -> str:
    lines: list[str] = []
    params = {"peak_tflops": CPU_PEAK, "size": "small", "steps": 5}
    code, output = asyncio.run(SystemHardware().run_tool("reference-job", params, lines.append))
    assert code == 0, output
    return output


def test_a_healthy_cpu_run_passes_the_profiles_mfu(cpu_run):
    parsed = reference_job.parse(cpu_run)
    assert parsed.error is None and parsed.findings == []
    device = parsed.metrics["devices"]["cpu"]
    assert (device["kind"], device["dtype"], device["steps"]) == ("cpu", "float32", 5)
    assert 0 < device["mfu"] < 1
    assert device["loss_last"] < device["loss_first"]
    verdict = judge_gate(
        "reference_job",
        {"reference-job": cpu_run},
        {"min_mfu": 1e-5, "peak_tflops": CPU_PEAK},
        CPU_NODE,
    )
    assert verdict.verdict == Verdict.PASS, verdict.to_dict()


def test_the_same_run_fails_a_profile_asking_more_mfu(cpu_run):
    verdict = judge_gate(
        "reference_job",
        {"reference-job": cpu_run},
        {"min_mfu": 0.99, "peak_tflops": CPU_PEAK},
        CPU_NODE,
    )
    assert verdict.verdict == Verdict.FAIL
    assert [(f.part, f.code) for f in verdict.findings] == [("node", "mfu_low")]
    assert "below the profile's 99%" in verdict.findings[0].message


def test_a_run_given_another_peak_than_the_profiles_cannot_be_judged(cpu_run):
    verdict = judge_gate(
        "reference_job", {"reference-job": cpu_run}, {"peak_tflops": 989}, CPU_NODE
    )
    assert verdict.verdict == Verdict.ERROR
    assert "the profile says 989" in verdict.error


def test_the_gate_sends_the_profiles_peak_and_steps_with_the_kernel_log():
    used = REFERENCE_JOB.thresholds_with({"peak_tflops": 1979, "steps": 30})
    tools = REFERENCE_JOB.runs(None, used)
    assert tools[0]["tool"] == "reference-job"
    assert (tools[0]["peak_tflops"], tools[0]["steps"]) == (1979, 30)
    assert [t["tool"] for t in tools] == ["reference-job", "xid"]


def test_a_gpu_that_throttles_under_load_is_named():
    node = lab.make_node("r1-u07", seed=3)
    healthy = judge_gate(
        "reference_job", {"reference-job": lab.reference_job_text(node)}, None, HGX
    )
    assert healthy.verdict == Verdict.PASS, healthy.to_dict()
    fault = {"name": "thermal_throttle", "component": "GPU 6"}
    slow = judge_gate(
        "reference_job", {"reference-job": lab.reference_job_text(node, fault)}, None, HGX
    )
    assert slow.verdict == Verdict.FAIL
    assert [(f.part, f.code) for f in slow.findings] == [("GPU 6", "mfu_low")]


def test_a_node_short_of_gpus_fails():
    text = lab.reference_job_text(lab.make_node("r1-u08", seed=3))
    missing = text.split("device name=cuda:7")[0] + "end devices=7 results=7 errors=0\n"
    verdict = judge_gate("reference_job", {"reference-job": missing}, None, HGX)
    assert verdict.verdict == Verdict.FAIL
    assert "sees 7 of 8 GPUs" in verdict.findings[0].message


def _replace(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


def test_a_device_that_faults_is_named(cpu_run):
    text = lab.reference_job_text(lab.make_node("r1-u09", seed=3))
    block = text.split("device name=cuda:3")[1].split("device name=cuda:4")[0]
    broken = _replace(
        text,
        "device name=cuda:3" + block,
        "device name=cuda:3 kind=cuda dtype=bfloat16 peak_tflops=989.0 label=H100\n"
        "error device=cuda:3 message=CUDA_error:_an_illegal_memory_access_was_encountered\n",
    )
    parsed = reference_job.parse(broken)
    assert [f.part for f in parsed.findings] == ["GPU 3"]
    assert "illegal memory access" in parsed.findings[0].message


@pytest.mark.parametrize(
    "change,expect",
    [
        (("loss_last=", "loss_last=nan_"), "non-finite"),
        (("step device=cpu n=5 ", "stepped device=cpu n=5 "), "4 of 5 steps"),
        (("loss_first=", "loss_first=0.1 was="), "did not train"),
        (("flops=", "flops=1"), "FLOP count"),
    ],
)
def test_a_run_without_evidence_of_training_fails(cpu_run, change, expect):
    parsed = reference_job.parse(_replace(cpu_run, *change))
    assert parsed.error is None
    assert expect in parsed.findings[0].message, parsed.findings


@pytest.mark.parametrize(
    "change,expect",
    [
        (
            ("greenlight-reference-job 1", "greenlight-reference-job 2"),
            "format 2 is not understood",
        ),
        (("end devices=1", "done devices=1"), "truncated"),
    ],
)
def test_unknown_or_cut_output_is_an_error(cpu_run, change, expect):
    assert expect in reference_job.parse(_replace(cpu_run, *change)).error


def test_a_run_cut_before_its_result_is_an_error(cpu_run):
    cut = cpu_run.split("result device=cpu")[0]
    assert "device cpu has no result" in reference_job.parse(cut).error
