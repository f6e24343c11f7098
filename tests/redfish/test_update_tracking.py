"""Following an update the way each vendor reports it: recorded answers and the lab's flavours.

sushy's recorded Task and iDRAC job bodies and the captures' own UpdateService are served over
real HTTP (tests/redfish/replay.py); the lab's flavours show the behaviours over time: iDRAC jobs
that wait Scheduled for the host and refuse a second job (LC068), iLO's task-less flash state,
OpenBMC's 202/204/404 monitors, GB200's aux power cycle.
"""

from __future__ import annotations

import copy

import pytest

from lab.bmc.flavours import FLAVOURS as LAB_FLAVOURS
from lab.hall import LabHall
from provisioning.redfish import PowerAction, RedfishClient, activation, update_tracking
from provisioning.redfish.activation import Activation
from provisioning.redfish.errors import RequestRejected
from provisioning.redfish.update_tracking import Progress, Receipt, Tracking

from .conftest import lab_client
from .replay import DELL_SAMPLES, replay, sample

BOOT = 40.0
TASK = "/redfish/v1/TaskService/Tasks/545"
JOB = "/redfish/v1/Managers/iDRAC.Embedded.1/Jobs/JID_878623579002"


def _client(url: str) -> RedfishClient:
    return RedfishClient(url, "admin", "pw", retries=0, use_sessions=False, allow_plain_http=True)


def _look(capture: str, path: str, body: dict | None, tracking: Tracking = Tracking.TASK):
    with replay(capture) as served:
        if body is not None:
            served.override(path, body)
        with _client(served.url) as client:
            return update_tracking.look(client, Receipt(tracking, path))


# -- recorded answers -----------------------------------------------------------------------


def test_a_completed_task_is_done_and_a_pending_one_runs_with_its_percent():
    done = _look("openbmc-bmcweb-stock", TASK, sample("task.json"))
    running = _look("openbmc-bmcweb-stock", TASK, sample("task2.json"))
    assert (done.progress, done.percent) == (Progress.DONE, 100)
    assert (running.progress, running.percent) == (Progress.RUNNING, 55)


def test_a_running_task_with_critical_status_has_failed_in_the_bmcs_words():
    body = copy.deepcopy(sample("task2.json"))
    body.update(TaskState="Running", TaskStatus="Critical")
    body["Messages"] = [{"MessageId": "Update.1.0.ApplyFailed", "Message": "Flash write failed"}]
    seen = _look("openbmc-bmcweb-stock", TASK, body)
    assert seen.progress is Progress.FAILED
    assert "Flash write failed" in seen.words


def test_a_monitor_that_is_gone_means_read_the_inventory_not_failed():
    seen = _look("openbmc-bmcweb-stock", "/redfish/v1/TaskService/Tasks/9/Monitor", None)
    assert seen.progress is Progress.VANISHED


def test_an_idrac_task_whose_job_is_scheduled_waits_for_a_host_reset():
    # TaskState "Starting", Oem.Dell.JobState "Scheduled": the package runs in the next POST.
    path = "/redfish/v1/TaskService/Tasks/JID_257309938313"
    seen = _look("dell-idrac9-r750", path, sample("task.json", DELL_SAMPLES), Tracking.DELL_JOB)
    assert seen.progress is Progress.NEEDS_HOST_RESET
    assert seen.words.replace("\xa0", " ") == "Task successfully scheduled."


def test_an_idrac_job_that_completed_is_done():
    seen = _look("dell-idrac9-r750", JOB, sample("job.json", DELL_SAMPLES), Tracking.DELL_JOB)
    assert (seen.progress, seen.words) == (Progress.DONE, "Job completed successfully.")


def test_a_task_that_transitioned_to_a_job_is_followed_to_the_job():
    task = copy.deepcopy(sample("task2.json"))
    task.update(TaskState="Completed", TaskStatus="OK")
    task["Messages"] = [{"MessageId": "Base.1.16.OperationTransitionedToJob", "MessageArgs": [JOB]}]
    running = {**sample("job.json", DELL_SAMPLES), "JobState": "Running", "PercentComplete": 30}
    with replay("dell-idrac9-r750") as served:
        served.override(TASK, task)
        served.override(JOB, running)
        with _client(served.url) as client:
            seen = update_tracking.look(client, Receipt(Tracking.TASK, TASK))
    # Not "done" because the task ended: the job it handed the work to still runs.
    assert (seen.progress, seen.percent) == (Progress.RUNNING, 30)
    assert seen.receipt == Receipt(Tracking.DELL_JOB, JOB)


@pytest.mark.parametrize(
    ("state", "progress"),
    [("Writing", Progress.RUNNING), ("Complete", Progress.DONE), ("Error", Progress.FAILED)],
)
def test_ilo_with_no_task_is_followed_by_its_flash_state(state, progress):
    capture = "hpe-ilo5-apollo6500-xl675d-a100"
    with replay(capture) as served:
        service = served.body_of("/redfish/v1/UpdateService")
        service["Oem"]["Hpe"].update(State=state, FlashProgressPercent=40)
        served.override("/redfish/v1/UpdateService", service)
        with _client(served.url) as client:
            # iLO answered SimpleUpdate 200 with no task monitor.
            receipt = update_tracking.receipt_for(client, None)
            seen = update_tracking.look(client, receipt)
    assert receipt.tracking is Tracking.HPE_FLASH
    assert seen.progress is progress


def test_the_idrac_job_queue_is_cleared_with_jid_clearall_and_other_bmcs_are_left_alone():
    service = "/redfish/v1/Managers/iDRAC.Embedded.1/Oem/Dell/DellJobService"
    with replay("dell-idrac9-r750") as served:
        served.override(service, sample("job_service.json", DELL_SAMPLES))
        with _client(served.url) as client:
            assert update_tracking.clear_job_queue(client) is True
        (sent,) = served.writes()
    # The action's own target (sushy's sample names the older /Dell/Managers path).
    assert sent.path.endswith("/DellJobService/Actions/DellJobService.DeleteJobQueue")
    assert (sent.method, sent.body) == ("POST", {"JobID": "JID_CLEARALL"})
    with replay("supermicro-hgx-sys821ge") as served:
        with _client(served.url) as client:
            assert update_tracking.clear_job_queue(client) is False
        assert served.writes() == []


def test_gb200_is_activated_by_aux_power_and_others_by_a_host_reset():
    with replay("nvidia-gb200") as served:
        with _client(served.url) as client:
            assert activation.rule_for(client, "bios") is Activation.AUX_POWER_RESET
            activation.activate(client, Activation.AUX_POWER_RESET)
        (sent,) = served.writes()
    assert sent.path == "/redfish/v1/Chassis/BMC_0/Actions/Oem/NvidiaChassis.AuxPowerReset"
    assert sent.body == {"ResetType": "AuxPowerCycleForce"}
    with replay("dell-idrac9-r750") as served:
        with _client(served.url) as client:
            assert activation.rule_for(client, "bios") is Activation.HOST_RESET


def test_a_new_xcc_image_is_activated_by_a_manager_reset():
    with replay("lenovo-xcc-sr670v2") as served:
        with _client(served.url) as client:
            assert activation.rule_for(client, "bmc") is Activation.MANAGER_RESET
            assert activation.rule_for(client, "bios") is Activation.HOST_RESET
            activation.activate(client, Activation.MANAGER_RESET)
        (sent,) = served.writes()
    assert (sent.path, sent.body) == (
        "/redfish/v1/Managers/1/Actions/Manager.Reset",
        {"ResetType": "GracefulRestart"},
    )


# -- the lab's flavours ---------------------------------------------------------------------


@pytest.fixture
def vendors():
    with LabHall(4, flavours=("dell", "hpe", "dgx", "gb200"), speed=0, seed=7) as running:
        yield running


def _update(client, component: str, version: str):
    (entry,) = [i for i in client.firmware_inventory() if i.kind == component]
    try:
        staged = client.update_firmware(
            image_uri=f"http://files.test/{component}-{version}.bin", targets=[entry.odata_id]
        )
    except Exception:  # noqa: BLE001 (GB200 offers only a multipart push)
        staged = client.update_firmware(
            image=b"\0" * 64, filename=f"{component}-{version}.bin", targets=[entry.odata_id]
        )
    return update_tracking.receipt_for(client, staged.task_monitor)


def test_lab_idrac_bios_job_waits_for_the_host_reset_and_then_applies(vendors):
    bmc = vendors.bmc_of_flavour("dell")
    with lab_client(bmc) as client:
        client.reset(PowerAction.ON)
        vendors.advance(BOOT)
        receipt = _update(client, "bios", "9.9.9")
        assert receipt.tracking is Tracking.DELL_JOB and "JID_" in receipt.ref
        vendors.advance(300)
        assert update_tracking.look(client, receipt).progress is Progress.NEEDS_HOST_RESET
        assert bmc.node.firmware["bios"] != "9.9.9"
        client.reset(PowerAction.RESTART)
        vendors.advance(BOOT)
        assert update_tracking.look(client, receipt).progress is Progress.DONE
    assert bmc.node.firmware["bios"] == "9.9.9"


def test_lab_idrac_refuses_a_second_job_while_one_is_pending_until_the_queue_is_cleared(vendors):
    bmc = vendors.bmc_of_flavour("dell")
    with lab_client(bmc) as client:
        _update(client, "bios", "9.9.9")
        vendors.advance(300)  # the BIOS job now waits, Scheduled
        # LC068, in the words sushy recorded (error_pending_job.json).
        with pytest.raises(RequestRejected, match="pending attribute changes"):
            _update(client, "bios", "9.9.10")
        assert update_tracking.clear_job_queue(client) is True
        assert update_tracking.clear_job_queue(client) is True  # idempotent
        receipt = _update(client, "bios", "9.9.10")
        assert update_tracking.look(client, receipt).progress is Progress.RUNNING


def test_lab_ilo_answers_with_no_task_and_a_host_reset_mid_flash_fails_it(vendors):
    bmc = vendors.bmc_of_flavour("hpe")
    with lab_client(bmc) as client:
        client.reset(PowerAction.ON)
        vendors.advance(BOOT)
        receipt = _update(client, "bios", "A47 v9.99")
        assert receipt == Receipt(Tracking.HPE_FLASH)
        vendors.advance(60)
        seen = update_tracking.look(client, receipt)
        assert seen.progress is Progress.RUNNING and 0 < seen.percent < 100
        client.reset(PowerAction.RESTART)
        vendors.advance(BOOT)
        seen = update_tracking.look(client, receipt)
    assert (seen.progress, seen.words) == (Progress.FAILED, "Error")
    assert bmc.node.firmware["bios"] != "A47 v9.99"


def test_lab_openbmc_monitor_answers_202_then_204_once_then_404(vendors):
    with lab_client(vendors.bmc_of_flavour("dgx")) as client:
        receipt = _update(client, "bios", "9.9.9")
        assert receipt.ref.endswith("/Monitor")
        assert update_tracking.look(client, receipt).progress is Progress.RUNNING
        vendors.advance(300)
        assert update_tracking.look(client, receipt).progress is Progress.DONE
        assert update_tracking.look(client, receipt).progress is Progress.VANISHED


def test_lab_gb200_keeps_the_old_version_until_the_aux_power_cycle(vendors):
    bmc = vendors.bmc_of_flavour("gb200")
    assert LAB_FLAVOURS["gb200"].multipart_path and not LAB_FLAVOURS["gb200"].simple_update
    with lab_client(bmc) as client:
        client.reset(PowerAction.ON)
        vendors.advance(BOOT)
        old = bmc.node.firmware["bmc"]
        receipt = _update(client, "bmc", "GB200Nvl-25.01-1")
        vendors.advance(300)
        assert update_tracking.look(client, receipt).progress is Progress.DONE
        client.reset(PowerAction.RESTART)
        vendors.advance(BOOT)
        (entry,) = [i for i in client.firmware_inventory() if i.kind == "bmc"]
        assert entry.version == old  # a host reset does not activate it
        assert activation.rule_for(client, "bmc") is Activation.AUX_POWER_RESET
        activation.activate(client, Activation.AUX_POWER_RESET)
        # The BMC restarted: its monitors are forgotten, and the client logs in again.
        assert update_tracking.look(client, receipt).progress is Progress.VANISHED
        (entry,) = [i for i in client.firmware_inventory() if i.kind == "bmc"]
    assert entry.version == "GB200Nvl-25.01-1"
