"""A 16-node lab rack with the standard fault mix through the real pipeline, then again.

Pass one: every healthy node reaches awaiting approval, every node with a hardware fault ends
failed or quarantined naming the faulty part, and no node fails of a transient fault alone.
Pass two over the same nodes: every firmware phase is skipped and no node changes at all.
"""

from __future__ import annotations

import json

import pytest

from lab.fault_mix import CAUGHT_BY  # the layer that must catch each hardware fault
from lab.run import LabRun, LabRunConfig, healthy_ok
from provisioning.core.phases import PHASE_NAMES
from provisioning.models import PhaseRecord

FIRMWARE_PHASES = [p for p in PHASE_NAMES if p.endswith("_firmware")]
OOB_FIRMWARE = ["bmc_firmware", "bios_firmware", "hgx_firmware"]
# Each vendor's way of finishing an update: iDRAC jobs, iLO's flash state, Supermicro's tasks,
# OpenBMC monitors (DGX), and GB200's aux power cycle before its new images run.
# One per node (the hall cycles through a shorter tuple): each vendor is its own SKU, and the
# fabric gate pairs a node with a healthy one of its SKU, so each vendor gets one of the mix's
# five hardware faults (nodes 0, 2, 6, 7 and 11 at seed 7) and at least two healthy nodes left
# to pair in the second pass.
FLAVOURS = (
    "dell", "dell", "supermicro", "dell", "hpe", "hpe", "hpe", "dgx",
    "supermicro", "supermicro", "dgx", "gb200", "dgx", "gb200", "gb200", "dell",
)  # fmt: skip


def _named(node: dict) -> bool:
    truth = {f["component"].lower() for f in node["injected_faults"] if f["kind"] == "hardware"}
    named = node["failed_component"].lower()
    return bool(named) and any(part in named or named in part for part in truth)


def _hardware_state(lab_node, inband) -> dict:
    return {
        "boots": lab_node.boot_count,
        "firmware": dict(lab_node.firmware),
        "bios": dict(lab_node.bios_current),
        "os": inband.os_image_sha256,
        "drives": dict(inband.drive_data),
        "bmc_writes": len(lab_node.writes),
    }


# A real rack through real processes: minutes on a busy 2-core machine.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_standard_fault_mix_then_an_idempotent_second_pass(tmp_path):
    config = LabRunConfig(
        nodes=16, faults="standard", seed=7, speed=400, timeout_s=600, flavours=FLAVOURS
    )
    with LabRun(config, log_dir=tmp_path) as lab:
        first = lab.run_pass()
        before = {
            n.serial: _hardware_state(n, lab.site.agents.states[n.serial]) for n in lab.hall.nodes
        }
        second = lab.run_pass()
        after = {
            n.serial: _hardware_state(n, lab.site.agents.states[n.serial]) for n in lab.hall.nodes
        }
    (tmp_path / "summary.json").write_text(json.dumps({"passes": [first, second]}, indent=2))

    assert first["finished"] and second["finished"]
    faulty = [n for n in first["nodes"] if n["hardware_fault"]]
    healthy = [n for n in first["nodes"] if not n["hardware_fault"]]
    assert len(faulty) == 5
    assert any(n["injected_faults"] for n in healthy), "the mix must include transient faults"
    for node in healthy:
        assert healthy_ok(node), node
    for node in faulty:
        assert node["final_state"] in ("failed", "quarantined"), node
        assert _named(node), node
        (fault,) = [f["name"] for f in node["injected_faults"] if f["kind"] == "hardware"]
        assert node["reason"].startswith(CAUGHT_BY[fault] + ":"), node

    # Every out-of-band firmware phase that ran in pass one ends with the version it verified.
    first_records = PhaseRecord.objects.filter(
        run__node__serial__in=[n["serial"] for n in healthy], phase__in=OOB_FIRMWARE,
        status="done",
    )  # fmt: skip
    assert first_records.exists()
    for record in first_records:
        target = record.run.manifest.spec["firmware"][record.phase.removesuffix("_firmware")]
        assert [c["to"] for c in record.changes] == [target["version"]], (
            record.phase,
            record.changes,
        )

    for node in second["nodes"]:
        if node["hardware_fault"]:
            continue
        assert healthy_ok(node), node
        assert after[node["serial"]] == before[node["serial"]], node["serial"]
    second_records = PhaseRecord.objects.filter(
        run__node__serial__in=[n["serial"] for n in healthy], phase__in=FIRMWARE_PHASES
    ).order_by("run__created_at")
    latest = {}
    for record in second_records:
        latest[(record.run.node_id, record.phase)] = record
    assert latest and all(r.status == "skipped" and r.changes == [] for r in latest.values())
