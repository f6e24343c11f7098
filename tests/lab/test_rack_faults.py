"""Rack faults only the rack-wide gate can see (issue 34), through the real processes: a small
GB200 rack (its shelves, switch trays and compute trays each behind their own lab BMC) brought up
by a rack run. Every member's own run, its single-node gates included, succeeds; the rack does not
pass, and the verdict names the exact tray, GPU, link or shelf.

1. Default staged rules, with a switch tray's port down, a GPU in another clique, a tray left out
   of IMEX, a GPU that fails dcgmi mndiag (the lab rack's profile asks for it), and a shelf that
   would trip on an early compute tray: the four faults are named; the shelf does not trip (the
   rules kept the order).
2. Rules whose switch stage checks nothing (`verify: none`): the compute trays boot while the
   fabric is still forming, the shelf trips, and the verdict names it.
"""

from __future__ import annotations

import json

import pytest

from acceptance.models import RackVerdict
from fleet.choices import NodeKind, RackState
from lab.agents import agent_address
from lab.rack_documents import RackShape
from lab.rack_run import LabRackConfig, LabRackRun
from provisioning.choices import RackRunStatus, RunStatus
from provisioning.models import Run

SHAPE = RackShape("faults", shelves=2, switches=2, trays=3)
PORT = 9  # switch tray 2's port 9: compute tray 3, GPU 1, link 2 in the lab's wiring
EARLY_STAGES = """rack_stages:
  - {kind: power_shelf, max_parallel: 1, verify: members_answer, time_limit: 30m}
  - {kind: switch_tray, max_parallel: 2, verify: none, time_limit: 1h}
  - {kind: compute_tray, max_parallel: 3, verify: members_answer, time_limit: 4h}
  - {kind: compute_tray, action: power_cycle, max_parallel: 3, verify: members_answer,
     time_limit: 30m}
"""


def every_member_run_succeeded(summary: dict) -> None:
    for member in summary["members"]:
        assert member["run_status"] == RunStatus.SUCCEEDED, member
    # The compute trays' runs ran their single-node gates, and passed them.
    trays = [m for m in summary["members"] if m["kind"] == NodeKind.COMPUTE_TRAY]
    assert len(trays) == SHAPE.trays
    gated = Run.objects.filter(node__kind=NodeKind.COMPUTE_TRAY, phases__phase="gate:gpu_health")
    assert gated.filter(status=RunStatus.SUCCEEDED).distinct().count() == SHAPE.trays


# A rack through real processes: minutes on a busy 2-core machine.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_fabric_faults_fail_the_rack_naming_them_and_the_rules_keep_the_shelf_up(tmp_path):
    faults = {
        ("switch_tray", 2): [f"nvlink_port_down:{PORT}"],
        ("compute_tray", 1): ["fabric_other_clique:2"],
        ("compute_tray", 2): ["imex_peer_missing"],
        ("compute_tray", 3): ["mndiag_gpu_fails:3"],
        ("power_shelf", 1): ["trips_if_compute_early"],
    }
    config = LabRackConfig(shape=SHAPE, rack_faults=faults, timeout_s=600, rack="LAB-F1")
    with LabRackRun(config, log_dir=tmp_path) as lab:
        summary = lab.run_pass()
        tray, gpu, link = lab.fabric.port_link(1, PORT)
        trays = list(lab.system.members().filter(kind=NodeKind.COMPUTE_TRAY))
        missing = agent_address(lab.lab_node("compute_tray", 2).index)
        other_gpu_serial = lab.lab_node("compute_tray", 1).gpus[2]["serial"]
    (tmp_path / "summary.json").write_text(json.dumps(summary, indent=2, default=str))

    assert summary["finished"], summary
    assert summary["status"] == RackRunStatus.FAILED and summary["rack_state"] == RackState.DEGRADED
    every_member_run_succeeded(summary)
    verdict = RackVerdict.objects.get(rack_run_id=summary["rack_run"])
    assert verdict.verdict == "fail"
    parts = {f["part"] for f in verdict.findings if f["severity"] == "critical"}
    named_tray = f"c{trays[tray].member_index:02d}"
    assert parts == {
        f"tray {named_tray} GPU {gpu} link {link}",  # the switch tray's down port
        "tray c01 GPU 2",  # the GPU in another clique
        "IMEX domain",
        "tray c02",  # left out of IMEX
        "tray c03 GPU 3",  # fails dcgmi mndiag, which the rack's profile asks for
    }, verdict.findings
    by_part = {f["part"]: f for f in verdict.findings}
    assert by_part["tray c01 GPU 2"]["part_serial"] == other_gpu_serial
    assert f"tray c02 ({missing}) is not in the IMEX domain" in by_part["tray c02"]["message"]
    assert "NVLink inactive" in by_part[f"tray {named_tray} GPU {gpu} link {link}"]["message"]
    assert "dcgmi mndiag MNUBERGEMM Fail: CUDA Error" in by_part["tray c03 GPU 3"]["message"]
    assert verdict.metrics["mndiag"]["ran_on"] == "c01"
    # The default rules formed the fabric before any compute tray booted: no shelf tripped.
    assert not any(m["shelf_tripped"] for m in summary["members"])
    assert all(s["power_state"] == "On" for s in verdict.shelves)
    assert "the rack-wide gate failed" in summary["last_error"]


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_shelf_tripped_by_an_early_compute_stage_fails_the_rack_naming_it(tmp_path):
    faults = {("power_shelf", 2): ["trips_if_compute_early"]}
    config = LabRackConfig(
        shape=SHAPE, rack_faults=faults, stages_yaml=EARLY_STAGES, timeout_s=600, rack="LAB-F2"
    )
    with LabRackRun(config, log_dir=tmp_path) as lab:
        summary = lab.run_pass()
        shelf = lab.system.members().get(kind=NodeKind.POWER_SHELF, member_index=2)
    (tmp_path / "summary.json").write_text(json.dumps(summary, indent=2, default=str))

    assert summary["finished"], summary
    assert summary["status"] == RackRunStatus.FAILED and summary["rack_state"] == RackState.DEGRADED
    every_member_run_succeeded(summary)
    verdict = RackVerdict.objects.get(rack_run_id=summary["rack_run"])
    critical = [f for f in verdict.findings if f["severity"] == "critical"]
    assert [(f["part"], f["part_serial"], f["code"]) for f in critical] == [
        ("power shelf 2", shelf.serial, "power_shelf_down")
    ], verdict.findings
    assert critical[0]["message"].startswith(f"power shelf 2 ({shelf.serial}): output Off")
