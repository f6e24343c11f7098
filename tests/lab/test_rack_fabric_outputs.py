"""What a lab GB200 rack's compute trays print of their NVLink domain (issue 34), through the
agent's tool interface, judged by the rack-wide verdict.

The generators reproduce the real captures they follow byte for byte. Each seeded rack fault,
alone, fails the rack with the exact tray, GPU or link named, while the same tray's nvidia-smi
report, which a single-node gate reads, has nothing critical in it: only the rack-wide verdict
can see these faults. (The real-process rack runs show every member's own gates passing.)
"""

from __future__ import annotations

import asyncio
import re

import pytest

from acceptance.choices import Verdict
from acceptance.parsers import PARSERS
from acceptance.parsers.base import Severity
from acceptance.rack_fabric import DomainShape, judge_rack_fabric
from acceptance.rack_gate import RACK_GATE_TOOLS
from acceptance.rack_judge import reports_from
from acceptance.rack_mndiag import judge as judge_mndiag
from lab.agents import LabHardware, agent_address
from lab.hall import LabHall
from lab.inband import InbandState
from lab.rack import LabRackFabric
from lab.rack_documents import RackShape
from lab.tool_outputs.rack_fabric import imex_nodes, nvlink_status
from tests.acceptance.sample_files import read
from tests.support.slurm import until

SHAPE = RackShape("t", shelves=1, switches=2, trays=3)
DOMAIN = DomainShape(trays=3, gpus_per_tray=4, links_per_gpu=4)


@pytest.fixture(scope="module")
def rack():
    with LabHall(len(SHAPE.layout()), flavours=SHAPE.flavours(), speed=2000, seed=4) as hall:
        fabric = LabRackFabric(hall, "LAB-T")
        for switch in fabric.switches:
            switch.reset("On", hall.clock.now())
        until(fabric.fabric_formed, "the switch trays' fabric to form")
        yield hall, fabric


def outputs(hall, tray) -> dict[str, str]:
    """What the tray's agent returns for the rack-wide gate's tools."""
    hardware = LabHardware(hall, tray, InbandState.fresh(tray))
    found = {}
    for tool in RACK_GATE_TOOLS:
        code, text = asyncio.run(hardware.run_tool(tool, {"duration_s": 0}, lambda line: None))
        assert code == 0, (tool, text)
        found[tool] = text
    return found


def judged(hall, fabric):
    named = [(f"c{i + 1:02d}", t.serial, outputs(hall, t)) for i, t in enumerate(fabric.trays)]
    return judge_rack_fabric(reports_from(named), DOMAIN), named


def critical(verdict) -> list:
    return [f for f in verdict.findings if f.severity == Severity.CRITICAL]


def test_the_generators_print_what_the_real_tools_print():
    real = read("real/imex_N_570.172_aws_pcluster_p6e_gb200_18_nodes_ready.txt")
    addresses = re.findall(r"^Node #\d+\s+-\s+(\S+)", real, re.MULTILINE)
    assert imex_nodes(addresses) == real
    paste = read("real/nvlink_smi_s_k8stestinfra371_gb200_elided.txt")
    gpu0 = nvlink_status([("NVIDIA GB200", "GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde")], 18)
    assert paste.startswith(gpu0)


def test_a_healthy_lab_rack_passes(rack):
    verdict, _ = judged(*rack)
    assert verdict.verdict == Verdict.PASS, [f.message for f in verdict.findings]
    assert verdict.metrics["gpus_in_domain"] == 12


FAULTS = {
    # A switch tray's down port: one compute tray GPU link, computed from the lab's wiring.
    "switch tray link down": ("switch", 1, "nvlink_port_down:6"),
    "GPU in another clique": ("tray", 2, "fabric_other_clique:3"),
    "IMEX peer missing": ("tray", 0, "imex_peer_missing"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_rack_fault_fails_the_rack_naming_it_and_no_tray_report_alone(rack, fault):
    hall, fabric = rack
    where, number, spec = FAULTS[fault]
    lab_node = (fabric.switches if where == "switch" else fabric.trays)[number]
    lab_node.faults.set(spec)
    try:
        verdict, named = judged(hall, fabric)
    finally:
        lab_node.faults.clear()
    messages = [f.message for f in critical(verdict)]
    assert verdict.verdict == Verdict.FAIL, messages
    if fault == "switch tray link down":
        tray, gpu, link = fabric.port_link(number, 6)
        name, serial, _ = named[tray]
        (finding,) = critical(verdict)
        assert finding.part == f"tray {name} GPU {gpu} link {link}", finding
        assert finding.message.endswith(f"link {link}: NVLink inactive"), finding
        assert f"tray {name} (serial {serial}) GPU {gpu}" in finding.message
    elif fault == "GPU in another clique":
        (finding,) = critical(verdict)
        assert finding.code == "fabric_other_clique" and finding.part == "tray c03 GPU 3"
        assert finding.part_serial == fabric.trays[2].gpus[3]["serial"]
    else:
        missing = agent_address(fabric.trays[0].index)
        assert any(f"tray c01 ({missing}) is not in the IMEX domain" in m for m in messages)
        assert all("tray c01" in m for m in messages), messages
    # What a single-node gate reads of each tray (its nvidia-smi report) has nothing critical.
    for _, _, found in named:
        report = PARSERS["nvidia-smi"](found["nvidia-smi"])
        assert not report.error and not critical(report), report.findings


def run_on(hall, tray, tool: str, params: dict) -> str:
    hardware = LabHardware(hall, tray, InbandState.fresh(tray))
    code, text = asyncio.run(hardware.run_tool(tool, {**params, "duration_s": 0}, lambda _: None))
    assert code == 0, (tool, text)
    return text


@pytest.mark.parametrize("failing", [None, 3])
def test_mndiag_on_the_head_tray_fails_a_gpu_only_the_rack_wide_gate_sees(rack, failing):
    hall, fabric = rack
    tray = fabric.trays[1]
    if failing is not None:
        tray.faults.set(f"mndiag_gpu_fails:{failing}")
    try:
        _, named = judged(hall, fabric)
        reports = reports_from(named)
        hosts = [r.imex_address for r in reports]
        text = run_on(hall, fabric.trays[0], "mndiag", {"hosts": hosts})
        diag = run_on(hall, tray, "dcgm", {"level": 3})
    finally:
        tray.faults.clear()
    parsed = PARSERS["mndiag"](text)
    assert parsed.error is None and parsed.metrics["num_hosts"] == 3
    assert sorted(parsed.metrics["hosts"]) == [r.hostname for r in reports]
    findings, metrics = judge_mndiag(reports, text, 4, head="c01")
    assert metrics["gpus"] == 12
    # The tray's own dcgmi diag, which its single-node gate reads, passes either way.
    assert not critical(PARSERS["dcgm"](diag))
    if failing is None:
        assert findings == []
        return
    (finding,) = findings
    assert (finding.part, finding.code) == ("tray c02 GPU 3", "mndiag_gpu_failed")
    assert finding.part_serial == tray.gpus[3]["serial"]
    assert "dcgmi mndiag MNUBERGEMM Fail: CUDA Error : cudaStreamQuery" in finding.message
