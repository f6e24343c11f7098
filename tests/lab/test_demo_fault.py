"""The demo rack carries exactly one node with a seeded hardware fault, the banner names it, and the
gates that judge the lab's output for that node fail it at the burn-in soak, naming the GPU."""

from __future__ import annotations

import pytest

from acceptance.choices import Verdict
from acceptance.gates import BURN_IN, GateName, judge_gate
from acceptance.soak import judge_soak
from acceptance.verdicts import SkuFacts
from lab import tool_outputs as lab_tools
from lab.agents import in_band_faults, sim_node
from lab.fault_mix import (
    CAUGHT_BY,
    DEMO_FAULT,
    demo_plan,
    fault_options,
    is_hardware,
    plan_faults,
)
from lab.hall import LabHall
from lab.management.commands.demo import LAB_NODES, seeded_faults
from lab.management.commands.lab import parse_faults
from lab.run import LabRun, LabRunConfig, healthy_ok

HGX = SkuFacts(8, 8, 400, 450, 8)
SOAK_S = 72 * 3600  # the sample profile's soak_hours


def test_the_demo_plan_seeds_exactly_one_hardware_fault():
    plan = demo_plan(LAB_NODES)
    assert len(plan) == 1
    ((index, specs),) = plan.items()
    assert 0 <= index < LAB_NODES and specs == [DEMO_FAULT]
    assert is_hardware(DEMO_FAULT) and DEMO_FAULT.partition(":")[0] in CAUGHT_BY
    assert plan_faults(LAB_NODES, "demo", seed=0) == plan
    # A rack smaller than the usual demo still gets its one fault, on its last node.
    assert demo_plan(2) == {1: [DEMO_FAULT]}


def test_a_demo_rack_of_no_nodes_and_an_unknown_mix_are_refused():
    with pytest.raises(ValueError, match="at least one node"):
        demo_plan(0)
    with pytest.raises(ValueError, match="known: none, standard, demo"):
        plan_faults(8, "chaos", seed=0)


def test_the_lab_serve_options_carry_the_plan_and_the_banner_names_the_node():
    plan = demo_plan(LAB_NODES)
    options = fault_options(plan)
    assert options[0] == "--fault"
    assert parse_faults(options[1::2]) == plan  # what `manage.py lab serve --fault` reads
    hall = LabHall(LAB_NODES, seed=0, faults=plan)
    faulty = [n for n in hall.nodes if n.faults.active]
    assert [n.index for n in faulty] == list(plan)

    inventory = {
        "nodes": [{"serial": n.serial, "faults": dict(n.faults.active)} for n in hall.nodes]
    }
    (line,) = seeded_faults(inventory)
    (node,) = faulty
    assert line == (
        f"node {node.serial} (U{node.index + 1}) carries a seeded fault: GPU 3 falls off the bus "
        "(XID 79) after half an hour of sustained load; 'Gate: Burn-in soak' should fail it and "
        "name GPU 3"
    )
    # Transient trouble is no verdict to announce.
    inventory["nodes"][0]["faults"] = {"bmc_503": "0.2"}
    assert len(seeded_faults(inventory)) == 1


def test_the_gates_fail_the_seeded_node_at_the_soak_and_name_the_gpu():
    """The lab's tool output for the faulty node, judged by the real gates: DCGM passes (the GPU
    is marginal), the burn-in soak fails it and names GPU 3; a healthy neighbour passes both."""
    plan = demo_plan(LAB_NODES)
    hall = LabHall(LAB_NODES, seed=0, faults=plan)
    for lab_node in hall.nodes:
        sim = sim_node(lab_node, seed=0)
        faults = in_band_faults(lab_node)
        health = judge_gate(
            GateName.GPU_HEALTH,
            {
                "dcgm": lab_tools.dcgm_diag_json(sim, 3, faults),
                "nvidia-smi": lab_tools.nvidia_smi_xml(sim, faults),
                "xid": lab_tools.kernel_log_xid(sim, faults),
            },
            None,
            HGX,
            sim.inventory(),
        )
        xid_log = lab_tools.kernel_log_xid(sim, faults, phase="soak", soak_s=SOAK_S)
        soak = judge_soak(
            lab_tools.soak_samples(sim, faults, SOAK_S, 1800),
            xid_log,
            BURN_IN.defaults,
            sim.bus_map(),
        )
        assert health.verdict == Verdict.PASS, (lab_node.index, health.findings)
        if lab_node.index in plan:
            assert soak.verdict == Verdict.FAIL
            assert "GPU 3" in {f.part for f in soak.findings}
        else:
            assert soak.verdict == Verdict.PASS, (lab_node.index, soak.findings)


# A real rack through real processes: minutes on a busy 2-core machine.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_rack_with_the_demo_plan_fails_only_the_seeded_node_naming_its_gpu(tmp_path):
    config = LabRunConfig(nodes=6, faults="demo", seed=0, speed=400, timeout_s=600)
    with LabRun(config, log_dir=tmp_path) as lab:
        result = lab.run_pass()
    assert result["finished"], result
    faulty = [n for n in result["nodes"] if n["hardware_fault"]]
    healthy = [n for n in result["nodes"] if not n["hardware_fault"]]
    assert len(faulty) == 1 and len(healthy) == 5
    (node,) = faulty
    assert node["final_state"] in ("failed", "quarantined"), node
    assert node["reason"].startswith(CAUGHT_BY["gpu_xid79"] + ":"), node
    assert "GPU 3" in node["failed_component"] or "GPU 3" in node["reason"], node
    for other in healthy:
        assert healthy_ok(other), other
