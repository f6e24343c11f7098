"""The firmware phases against lab BMCs flavoured after Dell, Supermicro HGX and DGX H100.

Each flavour lists what its real BMC lists beside the components a phase manages (backup,
golden and staging copies, the HGX tray's GPUs, NVSwitches and ERoTs, the BIOS's Intel ME,
dated BIOS versions): a phase that took any of them for its own would flash, fail to verify and
flash again. Pass one updates each firmware; pass two finds nothing to do.
"""

from __future__ import annotations

import pytest

from lab.run import LabRun, LabRunConfig
from provisioning.core.phases import PHASE_NAMES
from provisioning.models import PhaseRecord

OOB_FIRMWARE = ["bmc_firmware", "bios_firmware", "hgx_firmware"]
FIRMWARE_PHASES = [p for p in PHASE_NAMES if p.endswith("_firmware")]


def _latest(serial: str) -> dict[str, PhaseRecord]:
    records = PhaseRecord.objects.filter(
        run__node__serial=serial, phase__in=FIRMWARE_PHASES
    ).order_by("run__created_at", "id")
    return {record.phase: record for record in records}


# A real node through real processes: a minute or two per flavour on a busy machine.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("flavour", ["dell", "supermicro", "dgx"])
def test_second_pass_skips_every_firmware_phase(flavour, tmp_path):
    config = LabRunConfig(
        nodes=1, faults="none", flavour=flavour, speed=400, soak_hours=1, timeout_s=300
    )
    with LabRun(config, log_dir=tmp_path) as lab:
        lab_node = lab.hall.nodes[0]
        first = lab.run_pass()
        assert first["finished"], first
        after_first = _latest(lab_node.serial)
        for phase in OOB_FIRMWARE:
            assert after_first[phase].status == "done", (phase, after_first[phase].error)
        firmware = dict(lab_node.firmware)
        writes = len(lab_node.writes)

        second = lab.run_pass()
        assert second["finished"], second
        latest = _latest(lab_node.serial)
    assert set(latest) == set(FIRMWARE_PHASES)
    for phase, record in latest.items():
        assert (phase, record.status, record.changes) == (phase, "skipped", [])
    assert lab_node.firmware == firmware
    # Only the boot and power requests of pass two: no update was sent.
    assert not any("UpdateService" in w for w in lab_node.writes[writes:])
    # Two passes of every phase: the BMC never answered two mutating acts at once (issue 36).
    assert lab_node.most_acts_in_flight == 1
