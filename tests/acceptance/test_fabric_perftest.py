"""The fabric gate on nodes without NCCL: ib_write_bw per rail, read from real perftest output,
held to one NIC's line rate, and the slow node's rail named the way NCCL pairs name it."""

from types import SimpleNamespace

import pytest

from acceptance.choices import Verdict
from acceptance.fabric import PairResult, judge_fabric
from acceptance.gates import FABRIC
from acceptance.runner import judge
from acceptance.verdicts import SkuFacts
from agent.tool_commands import ToolParamsError, perftest_command
from tests import factories

from .sample_files import SAMPLES

# 24056.72 MB/s (2^20 bytes) average at 8 MiB: 201.8 Gb/s on an HDR (200 Gb/s) rail.
FAST = (SAMPLES / "real" / "superbench_ib_write_bw_8M.log").read_text()
# 0.48 Gb/s: the RoCE post-list run of perftest issue 273.
SLOW = (SAMPLES / "real" / "perftest_issue273_write_bw_postlist_gbits.txt").read_text()
HDR = SkuFacts(
    gpu_count=8, nic_count=8, nic_line_rate_gbps=200, nvlink_bandwidth_gbps=450, drive_count=8
)
NDR = SkuFacts(
    gpu_count=8, nic_count=8, nic_line_rate_gbps=400, nvlink_bandwidth_gbps=450, drive_count=8
)


def rail(a: str, b: str, text: str) -> PairResult:
    return PairResult(a, b, text, rail="NIC 3", tool="perftest")


def test_a_rail_at_line_rate_passes_and_names_its_tool():
    verdicts = judge_fabric([rail("r1-u01", "r1-u02", FAST)], HDR, FABRIC.defaults)
    assert {n: v.verdict for n, v in verdicts.items()} == {
        "r1-u01": Verdict.PASS,
        "r1-u02": Verdict.PASS,
    }
    assert verdicts["r1-u01"].metrics["pairs"][0]["fraction"] == 1.009
    assert "perftest" in verdicts["r1-u01"].tool_versions


def test_the_same_rail_is_slow_on_a_faster_nic():
    verdicts = judge_fabric([rail("r1-u01", "r1-u02", FAST)], NDR, FABRIC.defaults)
    finding = verdicts["r1-u01"].findings[0]
    assert (finding.part, finding.code) == ("NIC 3", "rail_slow")
    assert "ib_write_bw 50% of line rate" in finding.message


def test_only_the_node_slow_with_every_partner_is_named():
    pairs = [
        rail("r1-u01", "r1-u02", FAST),
        rail("r1-u02", "r1-u03", SLOW),
        rail("r1-u01", "r1-u03", SLOW),
    ]
    verdicts = judge_fabric(pairs, HDR, FABRIC.defaults)
    assert verdicts["r1-u01"].verdict == Verdict.PASS
    assert verdicts["r1-u02"].verdict == Verdict.PASS
    assert verdicts["r1-u03"].verdict == Verdict.FAIL
    assert [f.part for f in verdicts["r1-u03"].findings] == ["NIC 3"]


def test_a_cut_perftest_output_cannot_be_judged():
    cut = (SAMPLES / "real" / "perftest_issue234_write_bw_roce_paste_cut.txt").read_text()
    verdict = judge_fabric([rail("r1-u01", "r1-u02", cut)], HDR, FABRIC.defaults)["r1-u01"]
    assert verdict.verdict == Verdict.ERROR
    assert "truncated" in verdict.error


@pytest.mark.django_db
def test_a_node_without_gpus_is_sent_ib_write_bw_per_rail_and_judged_on_it(rack):
    """The gate runner sends a GPU-less node perftest, one rail at a time with each partner,
    and judges what comes back as perftest output."""
    sku = factories.make_sku("ib-storage-node", gpu_count=0, nic_count=2, nic_line_rate_gbps=200)
    alpha = factories.make_node(rack=rack, sku=sku, hostname="stor-01")
    beta = factories.make_node(rack=rack, sku=sku, hostname="stor-02", state="validating")
    ctx = SimpleNamespace(node=alpha, manifest={})
    tools = FABRIC.runs(ctx, FABRIC.defaults)
    assert {t["tool"] for t in tools} == {"perftest"}
    assert sorted(t["rail"] for t in tools) == [0, 1]
    assert all(t["hosts"] == ["stor-01", "stor-02"] and t["peer"] == beta.serial for t in tools)
    command = perftest_command(tools[0])
    assert command[:4] == ["mpirun", "--tag-output", "--host", "stor-01:1,stor-02:1"]
    assert "ib_write_bw -d mlx5_0" in command[-1] and "stor-02" in command[-1]

    outputs = {t["key"]: FAST for t in tools}
    assert judge(FABRIC, ctx, outputs, {}).verdict == Verdict.PASS
    slow_rail = {t["key"]: SLOW if t["rail"] == 1 else FAST for t in tools}
    verdict = judge(FABRIC, ctx, slow_rail, {})
    assert verdict.verdict == Verdict.FAIL
    assert [(f.part, f.code) for f in verdict.findings] == [("NIC 1", "rail_slow")]


def test_perftest_needs_its_peer_and_rail():
    with pytest.raises(ToolParamsError):
        perftest_command({"hosts": ["a"], "rail": 0})
    with pytest.raises(ToolParamsError):
        perftest_command({"hosts": ["a", "b"]})
