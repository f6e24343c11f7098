"""A firmware phase resumed in ACTIVATING after its worker stopped around the activation's POST
(issue 34): the stage is saved before the POST, so a worker that dies in between leaves a stage
that waits for a cycle. Resumed, the phase reads whether the activation reached the BMC: the
device shows a reset (down, power changed, new image) or, after a short grace, it does not and
the activation is sent once more. Either way exactly one cycle reaches the BMC.

The crash is the one fault the lab cannot cause: activation.activate raising once, before or
after its POST. Everything else is the lab's BMC: an NVLink switch tray (ComputerSystem.Reset
PowerCycle) and a GB200 compute tray (NvidiaChassis.AuxPowerReset), the lab clock stopped and
node time moved by hand (the lab's and the phase's together).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from fleet.choices import NodeKind
from lab.hall import LabHall
from provisioning import clock
from provisioning.choices import Stage
from provisioning.core.phase_state import ActivationRequest
from provisioning.core.phases import PHASES_BY_NAME, activation_steps, oob
from provisioning.core.phases.base import PhaseContext
from provisioning.models import PhaseRecord, Run
from provisioning.outcomes import Done, Failure, Wait
from provisioning.redfish import PowerAction, activation
from provisioning.redfish.bmc import session_pool
from tests.factories import make_node
from tests.redfish.conftest import lab_client
from tests.redfish.static import CAPTURES

BOOT = 40.0
POWER_CYCLE = "/redfish/v1/Systems/System_0/Actions/ComputerSystem.Reset"
AUX_POWER = "/redfish/v1/Chassis/BMC_0/Actions/Oem/NvidiaChassis.AuxPowerReset"
SWITCH_VERSION = "88.0002.1139"


class WorkerDied(Exception):
    """The worker process stopping at this point (the lab cannot kill one mid-call)."""


@pytest.fixture
def hall():
    with LabHall(2, flavours=("nvl_switch", "gb200_tray"), speed=0, seed=5) as running:
        yield running
        session_pool().close_all()


def _written(hall, bmc, manifest, kind: str, component: str, version: str) -> PhaseContext:
    """The phase as poll leaves it once the BMC has written the image (pending, not yet run)."""
    with lab_client(bmc) as client:
        client.reset(PowerAction.ON)
        hall.advance(BOOT)
        (entry,) = [i for i in client.firmware_inventory() if i.kind == component]
        staged = client.update_firmware(
            image=b"\0", filename=f"{component}-{version}.bin", targets=[entry.odata_id]
        )
    hall.advance(600)
    assert bmc.node.firmware[component] == entry.version  # written, waiting for its cycle
    bmc.node.writes.clear()  # the resets counted are the phase's: the power-on above is not
    node = make_node(
        kind=kind, bmc_address=bmc.https_url, bmc_username=bmc.node.username,
        bmc_password=bmc.node.password, bmc_cert_fingerprint=bmc.cert_fingerprint,
    )  # fmt: skip
    spec = {"firmware": {component: {"version": version, "url": "http://files.test/x.bin",
                                     "sha256": "0" * 64}}}  # fmt: skip
    run = Run.objects.create(node=node, manifest=manifest, status="running")
    record = PhaseRecord.objects.create(
        run=run, phase=f"{component}_firmware", order=1, status="running",
        started_at=timezone.now(), stage=Stage.UPDATING, bmc_task=staged.task_monitor or "",
        stage_started_at=timezone.now(), resume={"from": entry.version},
    )  # fmt: skip
    return PhaseContext(run=run, node=node, record=record, manifest=spec)


def _look(ctx: PhaseContext):
    try:
        return PHASES_BY_NAME[ctx.record.phase].execute(ctx)
    finally:
        ctx.close()


def _resumed(ctx: PhaseContext) -> PhaseContext:
    """A fresh worker's context: everything read back from the database."""
    record = PhaseRecord.objects.get(pk=ctx.record.pk)
    return PhaseContext(run=record.run, node=record.run.node, record=record, manifest=ctx.manifest)


def _later(hall, ctx: PhaseContext, seconds: float) -> None:
    """`seconds` of node time pass, for the lab and for the phase's stage clock."""
    hall.advance(seconds)
    PhaseRecord.objects.filter(pk=ctx.record.pk).update(
        stage_started_at=F("stage_started_at") - clock.real_delta(seconds)
    )
    ctx.record.refresh_from_db()


def _writes(bmc, path: str) -> int:
    return sum(1 for w in bmc.node.writes if w.lower() == f"post {path}".lower())


def _crash_before_post(monkeypatch) -> None:
    """The worker dies after ACTIVATING is saved, before the activation's POST leaves."""
    real = activation.activate

    def once(client, how):
        monkeypatch.setattr(activation, "activate", real)
        raise WorkerDied

    monkeypatch.setattr(activation, "activate", once)


def _crash_after_post(monkeypatch) -> None:
    """The worker dies after the BMC took the POST, before the mark that it was sent is saved."""
    real = activation.activate

    def once(client, how):
        monkeypatch.setattr(activation, "activate", real)
        real(client, how)
        raise WorkerDied

    monkeypatch.setattr(activation, "activate", once)


@pytest.mark.django_db
def test_a_switch_tray_whose_power_cycle_was_never_sent_gets_exactly_one_in_minutes(
    hall, manifest, monkeypatch
):
    switch = hall.bmc_of_flavour("nvl_switch")
    ctx = _written(hall, switch, manifest, NodeKind.SWITCH_TRAY, "bmc", SWITCH_VERSION)
    _crash_before_post(monkeypatch)
    with pytest.raises(WorkerDied):
        _look(ctx)
    ctx = _resumed(ctx)
    assert ctx.record.stage == Stage.ACTIVATING and _writes(switch, POWER_CYCLE) == 0
    assert not ActivationRequest.of(ctx.record.resume).sent
    spent = 0.0
    # Within the grace the tray is on, on its old image: look again soon, send nothing.
    outcome = _look(ctx)
    assert isinstance(outcome, Wait) and outcome.seconds <= activation_steps.GRACE_LOOK_S
    assert "no sign of a reset" in outcome.reason and _writes(switch, POWER_CYCLE) == 0
    while "sent again" not in outcome.reason and spent < activation_steps.GRACE_S:
        _later(hall, ctx, outcome.seconds)
        spent += outcome.seconds
        outcome = _look(_resumed(ctx))
        ctx = _resumed(ctx)
        assert isinstance(outcome, Wait), outcome
    # No reset in the grace: the PowerCycle goes out once, and the phase says why.
    assert isinstance(outcome, Wait) and "sent again" in outcome.reason, outcome
    assert _writes(switch, POWER_CYCLE) == 1
    assert ActivationRequest.of(ctx.record.resume) == ActivationRequest(
        how="power_cycle", sent=True, power_before="On", resent=True
    )
    _later(hall, ctx, BOOT * 2)
    spent += BOOT * 2
    outcome = _look(_resumed(ctx))
    assert isinstance(outcome, Done), outcome
    assert outcome.changes[0]["to"] == SWITCH_VERSION == switch.node.firmware["bmc"]
    assert _writes(switch, POWER_CYCLE) == 1
    assert spent < oob.POWER_CYCLE_LIMIT_S / 4


@pytest.mark.django_db
def test_a_switch_tray_that_took_the_power_cycle_before_the_worker_died_gets_no_second(
    hall, manifest, monkeypatch
):
    switch = hall.bmc_of_flavour("nvl_switch")
    ctx = _written(hall, switch, manifest, NodeKind.SWITCH_TRAY, "bmc", SWITCH_VERSION)
    _crash_after_post(monkeypatch)
    with pytest.raises(WorkerDied):
        _look(ctx)
    ctx = _resumed(ctx)
    assert not ActivationRequest.of(ctx.record.resume).sent  # the mark was lost
    assert _writes(switch, POWER_CYCLE) == 1
    # The tray shows the cycle it took (its power went down): the wait goes on as if marked.
    outcome = _look(ctx)
    assert isinstance(outcome, Wait) and "sent again" not in outcome.reason, outcome
    assert ActivationRequest.of(_resumed(ctx).record.resume).sent
    for _ in range(4):  # looks for as long as a resend would have taken: none comes
        _later(hall, ctx, activation_steps.GRACE_S / 2)
        outcome = _look(_resumed(ctx))
        if isinstance(outcome, Done):
            break
    assert isinstance(outcome, Done), outcome
    assert switch.node.firmware["bmc"] == SWITCH_VERSION
    assert _writes(switch, POWER_CYCLE) == 1


@pytest.mark.django_db
def test_a_compute_tray_whose_aux_power_cycle_was_never_sent_gets_exactly_one(
    hall, manifest, monkeypatch
):
    tray = hall.bmc_of_flavour("gb200_tray")
    ctx = _written(hall, tray, manifest, NodeKind.COMPUTE_TRAY, "bios", "2.0.0")
    before = tray.node.firmware["bios"]
    _crash_before_post(monkeypatch)
    with pytest.raises(WorkerDied):
        _look(ctx)
    ctx = _resumed(ctx)
    assert ctx.record.stage == Stage.ACTIVATING and _writes(tray, AUX_POWER) == 0
    assert isinstance(_look(ctx), Wait) and _writes(tray, AUX_POWER) == 0
    _later(hall, ctx, activation_steps.GRACE_S)
    outcome = _look(_resumed(ctx))
    assert isinstance(outcome, Wait) and "sent again" in outcome.reason, outcome
    assert _writes(tray, AUX_POWER) == 1
    assert tray.node.firmware["bios"] != before and tray.node.power == "Off"
    # The BMC answers again: on to the host's boot, as after a first-time aux power cycle.
    _look(_resumed(ctx))
    assert _resumed(ctx).record.stage == Stage.REBOOTING
    assert _writes(tray, AUX_POWER) == 1


@pytest.mark.django_db
def test_a_compute_tray_that_took_the_aux_power_cycle_gets_no_second(hall, manifest, monkeypatch):
    tray = hall.bmc_of_flavour("gb200_tray")
    ctx = _written(hall, tray, manifest, NodeKind.COMPUTE_TRAY, "bios", "2.0.0")
    _crash_after_post(monkeypatch)
    with pytest.raises(WorkerDied):
        _look(ctx)
    ctx = _resumed(ctx)
    assert not ActivationRequest.of(ctx.record.resume).sent and _writes(tray, AUX_POWER) == 1
    _later(hall, ctx, activation_steps.GRACE_S * 2)  # well past the grace: still no resend
    _look(_resumed(ctx))
    assert _resumed(ctx).record.stage == Stage.REBOOTING
    assert _writes(tray, AUX_POWER) == 1


@pytest.mark.django_db
def test_a_second_try_lost_the_same_way_fails_the_phase_instead_of_a_third(
    hall, manifest, monkeypatch
):
    switch = hall.bmc_of_flavour("nvl_switch")
    ctx = _written(hall, switch, manifest, NodeKind.SWITCH_TRAY, "bmc", SWITCH_VERSION)
    _crash_before_post(monkeypatch)
    with pytest.raises(WorkerDied):
        _look(ctx)
    _later(hall, ctx, activation_steps.GRACE_S)
    _crash_before_post(monkeypatch)
    with pytest.raises(WorkerDied):
        _look(_resumed(ctx))
    assert ActivationRequest.of(_resumed(ctx).record.resume).resent
    _later(hall, ctx, activation_steps.GRACE_S)
    outcome = _look(_resumed(ctx))
    assert isinstance(outcome, Failure) and "sent twice" in outcome.reason, outcome
    assert _writes(switch, POWER_CYCLE) == 0


@pytest.mark.django_db
def test_a_stage_saved_before_the_sent_mark_existed_only_waits(hall, manifest):
    # A record written by the code before this change: ACTIVATING with no activation keys.
    switch = hall.bmc_of_flavour("nvl_switch")
    ctx = _written(hall, switch, manifest, NodeKind.SWITCH_TRAY, "bmc", SWITCH_VERSION)
    ctx.set_stage(Stage.ACTIVATING)
    _later(hall, ctx, activation_steps.GRACE_S * 2)
    outcome = _look(_resumed(ctx))
    assert isinstance(outcome, Wait) and "AC cycle" in outcome.reason
    assert _writes(switch, POWER_CYCLE) == 0


def test_a_manager_reset_within_the_stage_is_read_from_its_own_clock():
    # A real GB200 BMC reports its DateTime and LastResetTime: one clock, no skew against ours.
    manager = json.loads((CAPTURES / "nvidia-gb200/Managers/BMC_0/index.json").read_text())
    now = datetime.fromisoformat(manager["DateTime"])
    age = now - datetime.fromisoformat(manager["LastResetTime"])
    assert activation.reset_age(manager) == age > timedelta(days=15)
    recent = {**manager, "LastResetTime": (now - timedelta(seconds=30)).isoformat()}
    assert activation.reset_age(recent) == timedelta(seconds=30)
    # OpenBMC's unset clock (its HGX baseboard's 1970) and a BMC that reports neither: nothing.
    assert activation.reset_age({**manager, "LastResetTime": "1970-01-01T00:00:00+00:00"}) is None
    assert activation.reset_age({"Id": "PMC_0"}) is None
