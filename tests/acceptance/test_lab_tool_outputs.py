"""The lab's tool outputs read back through the parsers, and a rack's fault mix is caught by the right gate."""

import pytest

from acceptance.choices import Verdict
from acceptance.fabric import PairResult, judge_fabric, plan_fabric_pairs
from acceptance.gates import BURN_IN, FABRIC, GateName, judge_gate
from acceptance.parsers import PARSERS, xid
from acceptance.soak import judge_soak
from acceptance.verdicts import SkuFacts
from lab import tool_outputs as lab

HGX = SkuFacts(8, 8, 400, 450, 8)
NODE = lab.make_node("r3-u11", seed=11)


def test_generators_are_deterministic():
    other = lab.make_node("r3-u11", seed=11)
    assert other == NODE
    assert lab.nccl_all_reduce((NODE, lab.make_node("x", 11))) == lab.nccl_all_reduce(
        (other, lab.make_node("x", 11))
    )
    assert lab.fio_json(NODE) == lab.fio_json(other)
    assert lab.make_node("r3-u11", seed=12).gpu_serials != NODE.gpu_serials


@pytest.mark.parametrize("version", ["3.3.7", "4.2.3"])
@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_dcgm_round_trip(version, level):
    result = PARSERS["dcgm"](lab.dcgm_diag_json(NODE, level, None, version))
    assert result.error is None and result.findings == []
    assert result.version == version and result.driver_version == NODE.driver_version
    assert result.metrics["level_inferred"] == level


@pytest.mark.parametrize("version", ["3.3.7", "4.2.3"])
def test_dcgm_ecc_fault_round_trip(version):
    fault = {"name": "ecc_uncorrectable", "component": "GPU 4"}
    result = PARSERS["dcgm"](lab.dcgm_diag_json(NODE, 3, fault, version))
    assert [(f.part, f.part_serial) for f in result.findings] == [("GPU 4", NODE.gpu_serials[4])]


def test_other_generators_round_trip():
    peer = lab.make_node("r3-u12", seed=11)
    assert PARSERS["nccl"](lab.nccl_all_reduce((NODE, peer))).metrics["ranks"] == 16
    nvb = PARSERS["nvbandwidth"](lab.nvbandwidth_text(NODE)).metrics
    assert len(nvb["testcases"]["device_to_device_memcpy_read_ce"]["matrix"]) == 8
    assert len(PARSERS["fio"](lab.fio_json(NODE)).metrics["devices"]) == 8
    assert PARSERS["gpu-burn"](lab.gpu_burn_text(NODE)).metrics["gpus_tested"] == 8
    smi = PARSERS["nvidia-smi"](lab.nvidia_smi_xml(NODE, under_load=True))
    assert [g["serial"] for g in smi.metrics["gpus"]] == list(NODE.gpu_serials)
    assert smi.findings == []
    assert xid.parse(lab.kernel_log_xid(NODE)).metrics["events"] == []


def test_marginal_gpu_passes_short_burn_and_fails_long_burn():
    fault = {"name": "marginal_gpu", "component": "GPU 3"}
    assert PARSERS["gpu-burn"](lab.gpu_burn_text(NODE, fault, duration_s=600)).findings == []
    long_run = PARSERS["gpu-burn"](lab.gpu_burn_text(NODE, fault, duration_s=72 * 3600))
    assert [f.part for f in long_run.findings] == ["GPU 3"]
    assert xid.parse(lab.kernel_log_xid(NODE, fault, phase="gate")).findings == []


FAULT_MIX = {
    "u01": None,
    "u02": {"name": "marginal_gpu", "component": "GPU 3"},
    "u03": {"name": "slow_nic", "component": "NIC 0"},
    "u04": {"name": "nvme_errors", "component": "NVMe 2"},
    "u05": {"name": "nvswitch_topology", "component": "GPU 5"},
    "u06": {"name": "ecc_uncorrectable", "component": "GPU 1"},
    "u07": {"name": "thermal_throttle", "component": "GPU 6"},
    "u08": None,
}
# Which gate should catch each fault first, and the part it must name.
EXPECTED = {
    "u02": (GateName.BURN_IN, "GPU 3"),
    "u03": (GateName.FABRIC, "fabric"),
    "u04": (GateName.STORAGE, "nvme2n1"),
    "u05": (GateName.NVBANDWIDTH, "GPU 5"),
    "u06": (GateName.GPU_HEALTH, "GPU 1"),
    # A GPU that throttles under load trains slowly: the minutes-long reference job sees it.
    "u07": (GateName.REFERENCE_JOB, "GPU 6"),
}


def _node_verdicts(node, fault, fabric) -> dict:
    soak_s = 72 * 3600
    burn = {
        "gpu-burn": lab.gpu_burn_text(node, fault, duration_s=soak_s),
        "nvidia-smi": lab.nvidia_smi_xml(node, fault, under_load=True),
        "xid": lab.kernel_log_xid(node, fault, phase="soak", soak_s=soak_s),
    }
    soak = judge_soak(
        lab.soak_samples(node, fault, soak_s, 1800), burn["xid"], BURN_IN.defaults, node.bus_map()
    )
    inventory = node.inventory()
    gate_outputs = {
        GateName.GPU_HEALTH: {
            "dcgm": lab.dcgm_diag_json(node, 3, fault),
            "nvidia-smi": lab.nvidia_smi_xml(node, fault),
            "xid": lab.kernel_log_xid(node, fault),
        },
        GateName.NVBANDWIDTH: {"nvbandwidth": lab.nvbandwidth_text(node, fault)},
        GateName.STORAGE: {"fio": lab.fio_json(node, fault)},
        GateName.REFERENCE_JOB: {"reference-job": lab.reference_job_text(node, fault)},
        GateName.BURN_IN: burn,
    }
    verdicts = {
        gate: judge_gate(gate, outputs, None, HGX, inventory)
        for gate, outputs in gate_outputs.items()
    }
    verdicts[GateName.FABRIC] = fabric[node.node_id]
    return {"gates": verdicts, "soak": soak}


def test_rack_fault_mix_is_caught_by_the_right_gate_and_healthy_nodes_pass():
    nodes = {k: lab.make_node(k, seed=21) for k in FAULT_MIX}
    faults = {k: f for k, f in FAULT_MIX.items() if f}
    pairs = [
        PairResult(a, b, lab.nccl_all_reduce((nodes[a], nodes[b]), faults))
        for a, b in plan_fabric_pairs(list(nodes))
    ]
    fabric = judge_fabric(pairs, HGX, FABRIC.defaults)
    order = [
        GateName.GPU_HEALTH,
        GateName.NVBANDWIDTH,
        GateName.FABRIC,
        GateName.STORAGE,
        GateName.REFERENCE_JOB,
        GateName.BURN_IN,
    ]
    for key, node in nodes.items():
        result = _node_verdicts(node, FAULT_MIX[key], fabric)
        failing = [g for g in order if result["gates"][g].verdict != Verdict.PASS]
        if key not in EXPECTED:
            assert failing == [], f"healthy {key} failed {failing}"
            assert result["soak"].verdict == Verdict.PASS
            continue
        gate, part = EXPECTED[key]
        assert failing and failing[0] == gate, f"{key}: first failing gate {failing}"
        assert result["gates"][gate].verdict == Verdict.FAIL
        parts = {f.part for f in result["gates"][gate].findings}
        assert part in parts, f"{key}: {parts}"
        if gate == GateName.BURN_IN:
            assert result["soak"].verdict == Verdict.FAIL
            assert part in {f.part for f in result["soak"].findings}
