"""A rack run survives its worker killed in the middle of the switch stage (issue 34), through the
real processes: the replacement resumes at that stage, and no member is flashed twice.

The worker is pinned in the worst window, as tests/provisioning/test_recovery.py pins it: the
first switch tray's BMC accepts its bundle update and holds the answer past the client's timeout,
so the worker that sent it has written nothing saying it was accepted, while the other switch
trays of the stage are in flight beside it. The lab BMCs count every update they accept.
"""

from __future__ import annotations

import pytest

from fleet.choices import EventKind, NodeKind, RackState
from fleet.models import Event
from lab import processes
from lab.rack_documents import RackShape
from lab.rack_run import LabRackConfig, LabRackRun
from provisioning.choices import RackRunStatus
from provisioning.models import Run
from provisioning.rack_models import RackRunStage
from tests.support.slurm import until

SHAPE = RackShape("recovery", shelves=1, switches=4, trays=1)


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_worker_killed_mid_switch_stage_resumes_there_flashing_no_member_twice(tmp_path):
    config = LabRackConfig(
        shape=SHAPE,
        rack="LAB-REC",
        timeout_s=600,
        rack_faults={("switch_tray", 1): ["update_answer_held:bmc"]},
    )
    with LabRackRun(config, log_dir=tmp_path) as lab:
        held = lab.lab_node("switch_tray", 1)
        rack_run = lab.start_rack_pass()
        until(lambda: held.flashes == ["bmc"], "the first switch tray to accept its bundle", 120)
        switch_stage = RackRunStage.objects.get(rack_run=rack_run, index=1)
        assert switch_stage.status == "running"
        in_flight = switch_stage.members.filter(status="running").count()
        processes.kill(lab.workers.pop())
        lab.add_worker(name="replacement")
        assert lab.wait_rack(rack_run)
        summary = lab.rack_summary(rack_run)
        flashes = {n.serial: list(n.flashes) for n in lab.hall.nodes}

    assert in_flight == 3, "the switch stage had three members in flight when the worker died"
    assert summary["status"] == RackRunStatus.SUCCEEDED, summary["last_error"]
    assert summary["rack_state"] == RackState.AWAITING_APPROVAL
    # Each member's BMC accepted each of its updates once: the bundle of every device, the six
    # parts of the compute tray; none after the restart.
    for member in summary["members"]:
        wanted = ["bmc"] if member["kind"] != NodeKind.COMPUTE_TRAY else None
        if wanted:
            assert flashes[member["serial"]] == wanted, member
        else:
            assert sorted(flashes[member["serial"]]) == sorted(set(flashes[member["serial"]]))
        # One node run per member: nothing was started over.
        assert Run.objects.filter(node__serial=member["serial"]).count() == 1, member
    # The rack run resumed at the switch stage: each stage began once.
    started = Event.objects.filter(kind=EventKind.RACK_RUN, message__contains=") started: ")
    assert sorted(e.data["stage"] for e in started) == [0, 1, 2, 3]
    # The replacement took over the held switch tray's run, at its firmware phase.
    takeover = Event.objects.filter(kind=EventKind.RUN_TAKEN_OVER, node__serial=held.serial).first()
    assert takeover is not None and "at bmc_firmware from lab0-" in takeover.message
