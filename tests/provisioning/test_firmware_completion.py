"""An out-of-band firmware phase finishes the way each vendor's BMC finishes an update.

Each test starts where `start` leaves a phase (the BMC accepted the update, the receipt saved)
and drives the phase's looks against a lab BMC with the lab clock stopped: iDRAC's job waits for
a host reset, iLO must not be reset mid-flash, a monitor that vanished is read from the
inventory, and GB200's new image runs only after the aux power cycle.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from lab.hall import LabHall
from provisioning.choices import Stage
from provisioning.core.phases import PHASES_BY_NAME
from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.oob import BMC_RESTART_WAIT_S
from provisioning.models import AgentSession, PhaseRecord, Run
from provisioning.outcomes import Done, Wait
from provisioning.redfish import PowerAction
from provisioning.redfish.bmc import session_pool
from tests.factories import make_node
from tests.redfish.conftest import lab_client

BOOT = 40.0


@pytest.fixture
def hall():
    with LabHall(4, flavours=("dell", "hpe", "dgx", "gb200"), speed=0, seed=5) as running:
        yield running
        session_pool().close_all()


def _pushed(hall, bmc, manifest, component: str) -> PhaseContext:
    """The phase as `start` leaves it: the node on, the BMC updating, the receipt saved."""
    version = manifest.spec["firmware"][component]["version"]
    with lab_client(bmc) as client:
        client.reset(PowerAction.ON)
        hall.advance(BOOT)
        (entry,) = [i for i in client.firmware_inventory() if i.kind == component]
        name = f"{component}-{version}.bin"
        try:
            staged = client.update_firmware(
                image_uri=f"http://files.test/{name}", targets=[entry.odata_id]
            )
        except Exception:  # noqa: BLE001 (GB200 offers only a multipart push)
            staged = client.update_firmware(image=b"\0", filename=name, targets=[entry.odata_id])
    node = make_node(
        bmc_address=bmc.https_url, bmc_username=bmc.node.username,
        bmc_password=bmc.node.password, bmc_cert_fingerprint=bmc.cert_fingerprint,
    )  # fmt: skip
    run = Run.objects.create(node=node, manifest=manifest, status="running")
    record = PhaseRecord.objects.create(
        run=run, phase=f"{component}_firmware", order=1, status="running",
        started_at=timezone.now(), stage=Stage.UPDATING, bmc_task=staged.task_monitor or "",
        stage_started_at=timezone.now(), resume={"from": entry.version},
    )  # fmt: skip
    return PhaseContext(run=run, node=node, record=record, manifest=manifest.spec)


def _look(ctx: PhaseContext):
    try:
        return PHASES_BY_NAME[ctx.record.phase].execute(ctx)
    finally:
        ctx.close()


def _agent_back(ctx: PhaseContext) -> None:
    """The ephemeral agent checks in after the reboot the phase asked for."""
    AgentSession.objects.create(
        node=ctx.node, boot_id=uuid.uuid4().hex, environment="ephemeral",
        token_hash=uuid.uuid4().hex,
    )  # fmt: skip


@pytest.mark.django_db
def test_idrac_bios_job_gets_its_host_reset_while_pending_then_is_followed_to_the_end(
    hall, manifest
):
    bmc = hall.bmc_of_flavour("dell")
    ctx = _pushed(hall, bmc, manifest, "bios")
    hall.advance(300)  # downloaded: the job is Scheduled until the host reboots
    boots = bmc.node.boot_count
    assert isinstance(_look(ctx), Wait)
    assert ctx.record.stage == Stage.APPLYING
    assert any("ComputerSystem.Reset" in w for w in bmc.node.writes)
    hall.advance(BOOT)
    assert bmc.node.boot_count == boots + 1
    _agent_back(ctx)
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert outcome.changes[0]["to"] == manifest.spec["firmware"]["bios"]["version"]
    assert bmc.node.boot_count == boots + 1  # one reset: the job's own


@pytest.mark.django_db
def test_ilo_is_never_reset_before_its_flash_state_reads_complete(hall, manifest):
    bmc = hall.bmc_of_flavour("hpe")
    ctx = _pushed(hall, bmc, manifest, "bios")
    assert ctx.record.bmc_task == ""  # iLO answered with no task
    boots = bmc.node.boot_count
    hall.advance(60)
    assert isinstance(_look(ctx), Wait)
    assert (ctx.record.stage, bmc.node.boot_count) == (Stage.UPDATING, boots)
    assert bmc.node.hpe_flash.state != "Error"
    hall.advance(300)
    _look(ctx)  # Complete: now the host reset that activates the ROM
    assert ctx.record.stage == Stage.REBOOTING
    hall.advance(BOOT)
    _agent_back(ctx)
    assert isinstance(_look(ctx), Done)
    assert bmc.node.firmware["bios"] == manifest.spec["firmware"]["bios"]["version"]


@pytest.mark.django_db
def test_a_monitor_forgotten_by_a_bmc_that_restarted_is_verified_by_its_inventory(hall, manifest):
    bmc = hall.bmc_of_flavour("dgx")
    ctx = _pushed(hall, bmc, manifest, "bmc")
    boots = bmc.node.boot_count
    hall.advance(300)  # flashed; the BMC restarted and forgot its tasks (404)
    bmc.node.reads.clear()
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert bmc.node.boot_count == boots  # nothing to activate: no host reset
    # One read of the inventory served the check and the record.
    assert bmc.node.reads["/redfish/v1/updateservice/firmwareinventory"] == 1


@pytest.mark.django_db
def test_gb200_runs_its_new_image_only_after_the_aux_power_cycle(hall, manifest):
    bmc = hall.bmc_of_flavour("gb200")
    ctx = _pushed(hall, bmc, manifest, "bios")
    hall.advance(300)
    assert isinstance(_look(ctx), Wait)
    assert ctx.record.stage == Stage.ACTIVATING
    assert any("NvidiaChassis.AuxPowerReset" in w for w in bmc.node.writes)
    assert bmc.node.power == "Off"  # the aux power cycle leaves the host off
    _look(ctx)  # the BMC answers again: boot the host into the ephemeral environment
    assert ctx.record.stage == Stage.REBOOTING
    hall.advance(BOOT)
    _agent_back(ctx)
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert bmc.node.firmware["bios"] == manifest.spec["firmware"]["bios"]["version"]


@pytest.mark.django_db
def test_a_servers_new_bmc_image_runs_without_a_host_reset(hall, manifest):
    # iDRAC flashes its new image and restarts itself: the host is not reset for it.
    bmc = hall.bmc_of_flavour("dell")
    ctx = _pushed(hall, bmc, manifest, "bmc")
    boots, writes = bmc.node.boot_count, len(bmc.node.writes)
    hall.advance(300)
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert outcome.changes[0]["to"] == manifest.spec["firmware"]["bmc"]["version"]
    assert bmc.node.boot_count == boots
    assert not any("ComputerSystem.Reset" in w for w in bmc.node.writes[writes:])


@pytest.mark.django_db
def test_a_bmc_whose_version_never_moves_gets_the_host_reset_after_the_wait(hall, manifest):
    bmc = hall.bmc_of_flavour("dell")
    ctx = _pushed(hall, bmc, manifest, "bmc")
    # A BMC that writes its image and runs it only at the next host reset.
    (task,) = [t for t in bmc.node.tasks.values() if t.component == "bmc"]
    task.activation = "host_reset"
    boots, writes = bmc.node.boot_count, len(bmc.node.writes)
    hall.advance(300)
    waiting = _look(ctx)
    assert isinstance(waiting, Wait) and "restart with its new image" in waiting.reason
    assert ctx.record.stage == Stage.BMC_RESTARTING and bmc.node.boot_count == boots
    assert isinstance(_look(ctx), Wait)  # still within the wait: still no reset
    assert not any("ComputerSystem.Reset" in w for w in bmc.node.writes[writes:])

    ctx.record.stage_started_at = timezone.now() - timedelta(seconds=BMC_RESTART_WAIT_S)
    _look(ctx)
    assert ctx.record.stage == Stage.REBOOTING
    hall.advance(BOOT)
    assert bmc.node.boot_count == boots + 1
    _agent_back(ctx)
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert bmc.node.firmware["bmc"] == manifest.spec["firmware"]["bmc"]["version"]


@pytest.mark.django_db
def test_a_bmc_unreachable_or_busy_while_it_restarts_is_waited_out_without_a_host_reset(
    hall, manifest
):
    bmc = hall.bmc_of_flavour("dell")
    ctx = _pushed(hall, bmc, manifest, "bmc")
    (task,) = [t for t in bmc.node.tasks.values() if t.component == "bmc"]
    task.activation = "host_reset"  # the version moves only when the restart below ends
    boots, writes = bmc.node.boot_count, len(bmc.node.writes)
    hall.advance(300)
    assert isinstance(_look(ctx), Wait)
    assert ctx.record.stage == Stage.BMC_RESTARTING

    # The BMC restarts: it drops every connection, then answers 503 while its services start.
    for fault in ("bmc_unreachable", "bmc_503:1.0"):
        hall.set_fault(bmc.node.index, fault)
        waiting = _look(ctx)
        hall.clear_fault(bmc.node.index)
        assert isinstance(waiting, Wait), (fault, waiting)
        assert "restart with its new image" in waiting.reason
        assert ctx.record.stage == Stage.BMC_RESTARTING

    # Back, running its new image.
    wanted = manifest.spec["firmware"]["bmc"]["version"]
    bmc.node.firmware["bmc"] = wanted
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert outcome.changes[0]["to"] == wanted
    assert bmc.node.boot_count == boots
    assert not any("ComputerSystem.Reset" in w for w in bmc.node.writes[writes:])
