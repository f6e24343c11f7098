"""Out-of-band phases: everything Greenlight does through the node's BMC over Redfish."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from fleet.choices import DEVICE_KINDS
from fleet.models import Rack

from ... import clock
from ...agents.link import EPHEMERAL, HOST_OS, is_alive
from ...agents.redaction import redactor_for
from ...artifacts import ArtifactMismatch, fetch_verified, verify_artifact
from ...boot import path as boot_path
from ...boot.credentials import arm_for_boot
from ...choices import ACTIVE_RUN_STATUSES, PhaseStatus, Stage
from ...models import PhaseRecord
from ...outcomes import Done, Failure, Outcome, Skipped, TransientFailure, Wait
from ...redfish import (
    PowerAction,
    PowerState,
    RedfishError,
    activation,
    firmware_update,
    update_tracking,
)
from ...redfish.activation import Activation
from ...redfish.errors import ActionNotSupported, BmcBusy, BmcUnreachable, ResourceMissing
from ...redfish.update_tracking import Progress
from ...redfish.versions import normalize_version
from .. import firmware_targets
from ..inventory import record_oob
from ..phase_state import ActivationRequest, FirmwarePush, PowerOnRequests
from . import activation_steps
from .base import Drift, Phase, PhaseContext, PhaseInfo
from .common import awaiting_boot, boot_ephemeral, powered_on_into, reboot_into, stage_boot

# Node seconds a power-on holds its slot in the rack: the inrush a PDU must absorb.
POWER_RAMP_S = 15.0
# Node seconds after a slot frees before its next node looks: a look exactly at the ramp's end
# may still count it (a worker's clock, a queue's delay) and wait a whole round more.
SLOT_MARGIN_S = 0.5
# Looks at a BMC's firmware update task: before it reports progress, and the bounds after.
TASK_LOOK_S = 60.0
TASK_LOOK_MIN_S = 15.0
TASK_LOOK_MAX_S = 300.0
# A look at a BMC restarting after an aux power cycle or a manager reset.
ACTIVATION_LOOK_S = 60.0
# Node seconds a switch tray may take from its AC power cycle to its new images reported.
POWER_CYCLE_LIMIT_S = 1200.0
POWER_ON_RETRIES = 3
# Node seconds a server's BMC may take, once its update reads done, to report the new BMC
# version (it flashes and restarts itself) before the host is reset in case it runs the image
# only then. Ironic's Redfish firmware interface does the same since its BMC-update rework
# (ironic/drivers/modules/redfish/firmware.py, _setup_bmc_update_monitoring and
# _handle_bmc_update_completion: "BMC updates do not reboot immediately ... If timeout expires
# without version change, we trigger a reboot").
BMC_RESTART_WAIT_S = 900.0


def _norm_mac(mac: str) -> str:
    return mac.strip().lower().replace("-", ":")


class Preflight(Phase):
    """The BMC answers and authenticates; its serial and MACs are the ones enrolled."""

    auditable = True

    def observe(self, ctx: PhaseContext) -> dict[str, Any]:
        bmc = ctx.bmc()
        info = bmc.system_info()
        try:
            firmware = bmc.firmware_inventory()
        except (ResourceMissing, ActionNotSupported):
            # No UpdateService or inventory (sushy-tools' libvirt driver, minimal OpenBMC
            # builds): nothing to record; a manifest that names firmware fails in its phase.
            firmware = []
        # The identity enrollment gave a BMC that reports no serial (sushy-tools): its system UUID.
        serial = info.serial or (f"uuid-{info.uuid}" if info.uuid else "")
        return {
            "serial": serial,
            "macs": sorted(_norm_mac(m) for m in bmc.mac_addresses()),
            "firmware": firmware,
        }

    def diff(self, ctx: PhaseContext, observed: dict[str, Any]) -> list[Drift]:
        enrolled = {_norm_mac(m) for m in ctx.node.mac_addresses}
        seen = set(observed["macs"])
        return [
            Drift("serial", ctx.node.serial, observed["serial"]),
            Drift("macs", sorted(enrolled), sorted(enrolled & seen) if enrolled else []),
        ]

    def execute(self, ctx: PhaseContext) -> Outcome:
        observed = self.observe(ctx)
        drifts = self.diff(ctx, observed)
        record_oob(ctx.node, observed["firmware"])
        compared = {d.component: d.as_dict() for d in drifts}
        for drift in drifts:
            if not drift.matched:
                return Failure(
                    f"{drift.component} mismatch: enrolled {drift.expected}, BMC reports "
                    f"{drift.actual}",
                    component="bmc",
                    permanent=True,
                )
        return Done(compared=compared)


class PowerOn(Phase):
    """Switch the node on, a few nodes of a rack at a time, and read the power state back."""

    def execute(self, ctx: PhaseContext) -> Outcome:
        bmc = ctx.bmc()
        power = bmc.power_state()
        if ctx.record.stage == Stage.NONE:
            if power in (PowerState.ON, PowerState.POWERING_ON):
                return Skipped({"power": str(power)})
            if power == PowerState.UNKNOWN:
                return TransientFailure("power state cannot be read")
            if not take_power_slot(ctx):
                return Wait(power_slot_wait_s(ctx), "waiting for a power-on slot in the rack")
            staged = stage_first_boot(ctx)
            if staged != PowerOnRequests(1):
                ctx.set_stage(Stage.RAMPING, resume=staged.into(None))
            # Each live credential may serve the boot: the ephemeral one staged, or whatever
            # the boot order holds.
            arm_for_boot(ctx.node.pk)
            bmc.reset(PowerAction.ON)
            return Wait(10, "powering on")
        if power == PowerState.ON:
            changes = [{"component": "power", "from": "Off", "to": "On"}]
            requests = PowerOnRequests.of(ctx.record.resume)
            if requests.boots_into:
                changes.append(
                    {"component": "boot", "from": "", "to": f"{requests.boots_into} once"}
                )
            if requests.boot_refused:
                # Shown with the phase: why this node's boot takes a restart (boot_ephemeral's).
                refused = (
                    f"not set before the power-on, the BMC refused it: {requests.boot_refused}"
                )
                return Done(changes=changes, compared={"boot": refused})
            return Done(changes=changes)
        if power == PowerState.POWERING_ON:
            return Wait(10, "powering on")
        if ctx.stage_elapsed() > 60:
            requests = PowerOnRequests.of(ctx.record.resume)
            tries = requests.sent
            if tries >= POWER_ON_RETRIES:
                return Failure(
                    f"the BMC accepted {tries} power-on requests and the node stayed off",
                    component="bmc",
                )
            # Some iDRAC firmware answers 204 to the first power-on and ignores it.
            ctx.set_stage(Stage.RAMPING, resume=replace(requests, sent=tries + 1).into(None))
            bmc.reset(PowerAction.ON)
        return Wait(10, f"powering on (the BMC reports {power})")


def power_on_records_in_rack(rack_id: int) -> QuerySet[PhaseRecord]:
    """The power_on records of the rack's active runs."""
    return PhaseRecord.objects.filter(
        phase="power_on", run__status__in=ACTIVE_RUN_STATUSES, run__node__rack_id=rack_id
    )


def ramping_in_rack(rack_id: int, now: datetime) -> QuerySet[PhaseRecord]:
    """The rack's power-ons holding a slot at `now`: ramping for less than POWER_RAMP_S."""
    since = now - clock.real_delta(POWER_RAMP_S)
    return power_on_records_in_rack(rack_id).filter(
        stage=Stage.RAMPING, stage_started_at__gte=since
    )


def power_slot_wait_s(ctx: PhaseContext) -> float:
    """Node seconds until this node's turn for a power-on slot of its rack: when the slots
    ramping now free up, one batch after another, for the nodes that asked before it.

    A node without a slot looked again every half ramp: a hall of 741 asked about 400 times a
    second, far past what the workers take, so the looks came late and slots stood unused (the
    last node of a 36-node rack ramped at 190 node seconds, where five batches of eight need 60).
    A node whose turn comes and finds every slot taken (a node ahead was late) asks again then.
    """
    rack_id = ctx.node.rack_id
    if rack_id is None:  # no rack, no slots: take_power_slot never refuses it
        return POWER_RAMP_S / 2
    batch = settings.GREENLIGHT_POWER_ON_BATCH
    now = timezone.now()
    ramping = ramping_in_rack(rack_id, now)
    starts = sorted(at for at in ramping.values_list("stage_started_at", flat=True) if at)[-batch:]
    if not starts:
        return POWER_RAMP_S / 2
    mine = ctx.record.started_at or now
    ahead = (
        power_on_records_in_rack(rack_id)
        .filter(stage=Stage.NONE, status__in=(PhaseStatus.RUNNING, PhaseStatus.WAITING))
        .filter(Q(started_at__lt=mine) | Q(started_at=mine, pk__lt=ctx.record.pk))
        .count()
    )
    # The slot this node waits for: the (ahead % batch)-th to free up, (ahead // batch) ramps on.
    frees_in = clock.node_seconds(starts[ahead % len(starts)] - now) + POWER_RAMP_S
    return max(frees_in + (ahead // len(starts)) * POWER_RAMP_S, 1.0) + SLOT_MARGIN_S


def stage_first_boot(ctx: PhaseContext) -> PowerOnRequests:
    """Set the boot of a node about to be powered on to the ephemeral environment, when its run
    boots that next: the first power-on request, with the environment's name, or with the
    BMC's refusal, or with neither when the node boots its own boot order.

    As Ironic does (boot device, then power): the override set after the power-on meant a
    restart, and a second POST, on every node; iLO even refuses it until the first POST is over
    (UnableToModifyDuringSystemPOST, whose resolution allows it "powered off"). Virtual media
    keeps the restart: its insert and Dell's virtual-CD boot (a configuration-import job) are
    not proven here against a host that is off. A BMC that refuses the override now leaves the
    boot to the boot_ephemeral phase, which sets it again and says why if it fails.
    """
    following = ctx.run.phases.filter(order__gt=ctx.record.order).order_by("order").first()
    if following is None or following.phase != "boot_ephemeral":
        return PowerOnRequests(1)
    if boot_path.boot_method(ctx.manifest) == boot_path.BootMethod.VIRTUAL_MEDIA:
        return PowerOnRequests(1)
    prepared = boot_path.prepare(ctx.bmc(), ctx.run, ctx.manifest)
    try:
        refused = stage_boot(ctx, prepared.target, http_boot_uri=prepared.http_boot_uri)
    except (BmcUnreachable, BmcBusy):
        raise  # transient: the look is retried, as any other
    except RedfishError as exc:
        # Its words are the BMC's, which may echo what was sent (the boot URI's key).
        return PowerOnRequests(1, boot_refused=redactor_for(ctx.node)(str(exc))[:200])
    if refused is not None:
        return PowerOnRequests(1, boot_refused=refused.reason)
    return PowerOnRequests(1, EPHEMERAL)


def next_task_look_s(elapsed_s: float, percent: int | None) -> float:
    """When to look at a BMC's update task again: at the end its progress so far predicts.

    An HGX tray takes ten minutes or more; a look a minute was most of a deployment's Redfish
    traffic while nothing changed. Bounded both ways: progress that stalls or jumps (some BMCs
    report in coarse steps) never puts the next look more than five minutes out.
    """
    if not percent or percent <= 0 or percent >= 100:
        return TASK_LOOK_S
    remaining = elapsed_s * (100 - percent) / percent
    return min(max(remaining, TASK_LOOK_MIN_S), TASK_LOOK_MAX_S)


def take_power_slot(ctx: PhaseContext) -> bool:
    """Claim one of the rack's power-on slots; False when all are taken."""
    rack_id = ctx.node.rack_id
    with transaction.atomic():
        if rack_id is not None:
            # The rack row is the lock: counting and claiming must not interleave.
            Rack.objects.select_for_update().filter(pk=rack_id).first()
            ramping = ramping_in_rack(rack_id, timezone.now()).count()
            if ramping >= settings.GREENLIGHT_POWER_ON_BATCH:
                return False
        ctx.set_stage(Stage.RAMPING, resume=PowerOnRequests(1).into(None))
    return True


class BootEphemeral(Phase):
    """Boot the node once into the ephemeral environment (virtual media, UEFI HTTP or PXE)."""

    def execute(self, ctx: PhaseContext) -> Outcome:
        alive = is_alive(ctx.node)
        if alive is not None:
            return Skipped({"agent": f"already up ({alive.environment}, boot {alive.boot_id[:8]})"})
        method = boot_path.boot_method(ctx.manifest)
        if powered_on_into(ctx, EPHEMERAL):
            # The power-on's boot is on its way there (stage_first_boot): wait_for_agent awaits it.
            return Skipped({"boot": f"{method.value} once, set before the power-on"})
        boot_ephemeral(ctx, Stage.REBOOTING)
        return Done(changes=[{"component": "boot", "from": "", "to": f"{method.value} once"}])


class OobFirmware(Phase):
    """One firmware component the BMC updates itself (UpdateService): bmc, bios or hgx."""

    auditable = True

    def __init__(self, info: PhaseInfo):
        super().__init__(info)
        self.kind = info.name.removesuffix("_firmware")

    def target(self, ctx: PhaseContext) -> dict[str, str] | None:
        return (ctx.manifest.get("firmware") or {}).get(self.kind)

    def observe(self, ctx: PhaseContext) -> list:
        """The running inventory entries this phase manages (firmware_targets.managed)."""
        return [item for item, _ in self.managed(ctx, ctx.bmc().firmware_inventory())]

    def managed(self, ctx: PhaseContext, inventory: list) -> list:
        return firmware_targets.managed(self.kind, inventory, self.target(ctx))

    def diff(self, ctx: PhaseContext, observed: list) -> list[Drift]:
        target = self.target(ctx)
        if target is None:
            return []
        if not observed:
            return [Drift(self.kind, target["version"], None)]
        candidates = firmware_targets.targets(self.kind, target)
        # Versions are compared as their kind writes them ("BIOS Date: .. Ver 1.4" is 1.4).
        return [
            Drift(
                f"{self.kind} {item.name}",
                normalize_version(item.kind, wanted.version),
                normalize_version(item.kind, item.version),
            )
            for item in observed
            if (wanted := firmware_targets.target_for(item, candidates)) is not None
        ]

    def execute(self, ctx: PhaseContext) -> Outcome:
        target = self.target(ctx)
        if target is None:
            return Skipped({"reason": f"the manifest sets no {self.kind} firmware"})
        stage = ctx.record.stage
        if stage == Stage.NONE:
            return self.start(ctx, target)
        if stage == Stage.PUSHING:
            return self.resume_push(ctx, target)
        if stage == Stage.UPDATING:
            return self.poll(ctx, target)
        if stage == Stage.APPLYING:
            return self.applying(ctx, target)
        if stage == Stage.ACTIVATING:
            return self.activated(ctx, target)
        if stage == Stage.BMC_RESTARTING:
            return self.bmc_restarted(ctx, target)
        if stage == Stage.REBOOTING:
            waiting = awaiting_boot(ctx)
            if waiting is not None:
                return waiting
            return self.verify(ctx, target)
        return Failure(f"unknown stage {stage!r}")

    def start(self, ctx: PhaseContext, target: dict[str, str]) -> Outcome:
        items = self.observe(ctx)
        drifts = self.diff(ctx, items)
        compared = {"drift": [d.as_dict() for d in drifts]}
        if not items:
            return Failure(f"the BMC lists no {self.kind} firmware", component=self.kind)
        if all(d.matched for d in drifts):
            return Skipped(compared)
        try:
            verify_artifact(target["url"], target["sha256"])
        except ArtifactMismatch as exc:
            return Failure(str(exc), component=self.kind, permanent=True)
        # iDRAC: a leftover job (a BIOS configuration job, a failed update) would refuse the new
        # one (LC068, RAC0679); clearing the queue first makes every retry start clean.
        update_tracking.clear_job_queue(ctx.bmc())
        if ctx.node.kind in DEVICE_KINDS:
            # A device's image must run with no host reset of Greenlight's: a shelf's PMC left
            # at HttpPushUriApplyTime OnReset is asked for Immediate first, as NVIDIA's tools do.
            firmware_update.push_immediately(ctx.bmc())
        # The intent is saved before the BMC is asked, with the tasks the BMC lists now. A BMC
        # that accepted the update shows a new task, while the component's version only changes
        # at the next reset: if the worker dies (or the answer is lost) between the BMC accepting
        # the update and the receipt being saved below, the next look finds that task in
        # resume_push and follows it, instead of flashing the component a second time.
        before = FirmwarePush(items[0].version, tuple(ctx.bmc().task_members()))
        ctx.set_stage(Stage.PUSHING, bmc_task="", compared=compared, resume=before.into(None))
        # The image is fetched (and checked against its sha256) only if the BMC takes no
        # ImageURI or refuses it: GB200 and Supermicro take a multipart push of the bytes.
        staged = ctx.bmc().update_firmware(
            image_uri=target["url"],
            open_image=lambda: fetch_verified(target["url"], target["sha256"]),
            filename=target["url"].rsplit("/", 1)[-1],
            targets=[items[0].odata_id],
            kind=self.kind,
        )
        pushed = FirmwarePush(from_version=items[0].version).into(None)
        ctx.set_stage(Stage.UPDATING, bmc_task=staged.task_monitor or "", resume=pushed)
        return Wait(TASK_LOOK_S, f"BMC updating {self.kind} to {target['version']}")

    def resume_push(self, ctx: PhaseContext, target: dict[str, str]) -> Outcome:
        """A look after a push whose answer was never recorded: observe the BMC, push at most once.

        The run holds the node, so a task the BMC lists now and did not list before the push is
        that push's: follow it. No new task means the BMC never took the request; start again
        (which observes the inventory first, so a component already at the target is skipped).
        """
        push = FirmwarePush.of(ctx.record.resume)
        before = set(push.tasks_before or ())
        new = [task for task in ctx.bmc().task_members() if task not in before]
        if not new:
            return self.start(ctx, target)
        pushed = FirmwarePush(from_version=push.from_version).into(ctx.record.resume)
        ctx.set_stage(Stage.UPDATING, bmc_task=new[-1], resume=pushed)
        return self.poll(ctx, target)

    def look(self, ctx: PhaseContext) -> update_tracking.UpdateLook:
        """One look at the update in flight, followed the way this BMC reports it."""
        bmc = ctx.bmc()
        seen = update_tracking.look(bmc, update_tracking.receipt_for(bmc, ctx.record.bmc_task))
        if seen.receipt.ref != ctx.record.bmc_task:
            # The task handed the work to a job (OperationTransitionedToJob): follow the job.
            ctx.record.bmc_task = seen.receipt.ref
            ctx.save_fields("bmc_task")
        if seen.percent is not None and seen.progress is Progress.RUNNING:
            # Kept for the panel's and the slot's bar (provisioning.core.progress).
            push = replace(FirmwarePush.of(ctx.record.resume), task_percent=seen.percent)
            ctx.record.resume = push.into(ctx.record.resume)
            ctx.save_fields("resume")
        return seen

    def poll(self, ctx: PhaseContext, target: dict[str, str]) -> Outcome:
        """While the BMC writes the image: wait, reset the host for a job that waits for it,
        or, once it is written, make it run."""
        seen = self.look(ctx)
        if seen.progress is Progress.RUNNING:
            return self.still_running(ctx, target, seen)
        if seen.progress is Progress.FAILED:
            return self.failed(seen)
        if seen.progress is Progress.NEEDS_HOST_RESET:
            # iDRAC: a BIOS or NIC package's job runs in the host's next POST. The reset is
            # the one the update needs: no second one after the job completes.
            return boot_ephemeral(ctx, Stage.APPLYING)
        if seen.progress is Progress.VANISHED:
            # Nothing left to follow and the inventory already shows the target (a BMC that
            # flashed and restarted itself, forgetting its tasks): nothing to activate.
            inventory = self.inventory_if_at_target(ctx)
            if inventory is not None:
                return self.verify(ctx, target, inventory)
        return self.activate(ctx, target)

    def applying(self, ctx: PhaseContext, target: dict[str, str]) -> Outcome:
        """The host was reset for a job that waited for it: follow the job, then the boot."""
        seen = self.look(ctx)
        if seen.progress in (Progress.RUNNING, Progress.NEEDS_HOST_RESET):
            return self.still_running(ctx, target, seen)
        if seen.progress is Progress.FAILED:
            return self.failed(seen)
        waiting = awaiting_boot(ctx)
        if waiting is not None:
            return waiting
        return self.verify(ctx, target)

    def activate(self, ctx: PhaseContext, target: dict[str, str]) -> Outcome:
        """Make the written image run, by the platform's rule (redfish.activation)."""
        bmc = ctx.bmc()
        how = activation.rule_for(bmc, self.kind, ctx.node.kind)
        if how is Activation.POWER_CYCLE:
            inventory = self.inventory_if_at_target(ctx)
            if inventory is not None:
                return self.verify(ctx, target, inventory)  # already running: no AC cycle
        if how is Activation.HOST_RESET and ctx.node.kind in DEVICE_KINDS:
            # A switch tray's or power shelf's bundle (BMC, CPLD, NVOS) runs once its BMC has
            # restarted itself: there is no host of Greenlight's to reboot and no agent to await.
            inventory = self.inventory_if_at_target(ctx)
            if inventory is not None:
                return self.verify(ctx, target, inventory)
            return Wait(ACTIVATION_LOOK_S, f"waiting for the BMC to run its new {self.kind} image")
        if how is Activation.HOST_RESET and self.kind == "bmc":
            # A server's BMC runs its new image once it has restarted itself: no host reset.
            return self.bmc_restarted(ctx, target)
        if how is Activation.HOST_RESET:
            # The new image takes effect at the next reset, which brings the agent back.
            return boot_ephemeral(ctx, Stage.REBOOTING)
        # Saved first, marked sent once the BMC answers: a worker dying after the BMC restarts
        # (or a switch tray's AC cycle) must not activate twice, and one dying before the POST
        # must not leave the stage waiting for a cycle nobody sent (unconfirmed).
        activation_steps.request(ctx, how)
        return Wait(ACTIVATION_LOOK_S, f"activating {self.kind} {target['version']} ({how})")

    def unconfirmed(
        self, ctx: PhaseContext, target: dict[str, str], asked: ActivationRequest
    ) -> Outcome:
        """ACTIVATING with no mark that the BMC took the activation: the worker stopped around
        its POST. A device that shows a reset got it: on as if marked. One that shows none
        within the grace never did: send it once more (a second loss fails the phase rather
        than risk a third cycle)."""
        how = Activation(asked.how)
        if activation_steps.reset_sign(ctx, asked, lambda: self.at_target(ctx)) is not None:
            activation_steps.mark_sent(ctx, asked)
            return self.activated(ctx, target)
        if ctx.stage_elapsed() < activation_steps.GRACE_S:
            return Wait(activation_steps.GRACE_LOOK_S, f"checking that the BMC took the {how} "
                        "(its answer was never recorded): no sign of a reset yet")  # fmt: skip
        if asked.resent:
            return Failure(f"the {how} for {self.kind} was sent twice with no answer recorded "
                           "and the device shows no reset", component=self.kind)  # fmt: skip
        activation_steps.resend(ctx, asked)
        return Wait(ACTIVATION_LOOK_S, f"{how} sent again for {self.kind} {target['version']}: "
                    "the first never reached the BMC (the worker stopped before sending it; "
                    f"no reset in {clock.minutes_text(activation_steps.GRACE_S)})")  # fmt: skip

    def activated(self, ctx: PhaseContext, target: dict[str, str]) -> Outcome:
        """After an aux power cycle or a manager reset: once the BMC answers, boot the host
        (an aux power cycle leaves it off) or, after a manager reset, verify. After a switch
        tray's AC cycle: verify once the tray is back on with its new images (or time is up)."""
        asked = ActivationRequest.of(ctx.record.resume)
        if not asked.sent:
            return self.unconfirmed(ctx, target, asked)
        bmc = ctx.bmc()
        try:
            power = bmc.power_state()
            how = activation.rule_for(bmc, self.kind, ctx.node.kind)
            back = how is not Activation.POWER_CYCLE or (
                power == PowerState.ON and self.at_target(ctx)
            )
        except (BmcUnreachable, BmcBusy):
            return Wait(ACTIVATION_LOOK_S, f"waiting for the BMC to restart ({self.kind})")
        if power == PowerState.UNKNOWN:
            return Wait(ACTIVATION_LOOK_S, f"waiting for the BMC to restart ({self.kind})")
        if not back and ctx.stage_elapsed() < POWER_CYCLE_LIMIT_S:
            # The BMC may answer for a moment before the AC drops, and again before it lists
            # the new images: only the tray back on with them ends the wait.
            return Wait(ACTIVATION_LOOK_S, f"waiting for the switch tray's AC cycle ({self.kind})")
        if how in (Activation.MANAGER_RESET, Activation.POWER_CYCLE):
            return self.verify(ctx, target)
        return boot_ephemeral(ctx, Stage.REBOOTING)

    def bmc_restarted(self, ctx: PhaseContext, target: dict[str, str]) -> Outcome:
        """A server's BMC image written: done once the BMC reports it (it flashes and restarts
        itself, unreachable meanwhile); the host reset only for a BMC whose version has not
        moved within BMC_RESTART_WAIT_S, which may run the image only after one."""
        try:
            inventory = ctx.bmc().firmware_inventory()
        except (BmcUnreachable, BmcBusy):
            inventory = None  # restarting with the new image
        if inventory is not None and self.inventory_at_target(ctx, inventory):
            return self.verify(ctx, target, inventory)
        if ctx.record.stage != Stage.BMC_RESTARTING:
            ctx.set_stage(Stage.BMC_RESTARTING)
        elif ctx.stage_elapsed() >= BMC_RESTART_WAIT_S:
            return boot_ephemeral(ctx, Stage.REBOOTING)
        return Wait(
            ACTIVATION_LOOK_S,
            f"waiting for the BMC to restart with its new image ({target['version']})",
        )

    def still_running(
        self, ctx: PhaseContext, target: dict[str, str], seen: update_tracking.UpdateLook
    ) -> Outcome:
        percent = f" ({seen.percent}%)" if seen.percent is not None else ""
        return Wait(
            next_task_look_s(ctx.stage_elapsed(), seen.percent),
            f"BMC updating {self.kind} to {target['version']}{percent}",
        )

    def failed(self, seen: update_tracking.UpdateLook) -> Outcome:
        words = seen.words or seen.progress.value
        return Failure(f"{self.kind} firmware update failed: {words}", component=self.kind)

    def at_target(self, ctx: PhaseContext) -> bool:
        return self.inventory_if_at_target(ctx) is not None

    def inventory_if_at_target(self, ctx: PhaseContext) -> list | None:
        """The BMC's firmware inventory if it shows the target, else None: one read (a GET per
        member) serves both the check and `verify`'s record."""
        inventory = ctx.bmc().firmware_inventory()
        return inventory if self.inventory_at_target(ctx, inventory) else None

    def inventory_at_target(self, ctx: PhaseContext, inventory: list) -> bool:
        pairs = self.managed(ctx, inventory)
        return bool(pairs) and all(firmware_targets.at_target(i, w) for i, w in pairs)

    def verify(
        self, ctx: PhaseContext, target: dict[str, str], inventory: list | None = None
    ) -> Outcome:
        # One read of the inventory serves the check and the record (each is a GET per member):
        # the caller's, where it has just read it.
        if inventory is None:
            inventory = ctx.bmc().firmware_inventory()
        pairs = self.managed(ctx, inventory)
        items = [item for item, _ in pairs]
        record_oob(ctx.node, inventory)
        before = FirmwarePush.of(ctx.record.resume).from_version
        if pairs and all(firmware_targets.at_target(item, wanted) for item, wanted in pairs):
            return Done(
                changes=[{"component": self.kind, "from": before, "to": target["version"]}],
                compared=ctx.record.compared,
            )
        now = ", ".join(i.version for i in items) or "nothing"
        return Failure(
            f"{self.kind} update reported success but the BMC still reports {now}",
            component=self.kind,
        )


class BiosSettings(Phase):
    """BIOS attributes: staged in the pending-settings object, applied at the next reset."""

    auditable = True

    def observe(self, ctx: PhaseContext) -> dict[str, Any]:
        return ctx.bmc().bios_attributes()

    def diff(self, ctx: PhaseContext, observed: dict[str, Any]) -> list[Drift]:
        wanted = ctx.manifest.get("bios_settings") or {}
        return [Drift(f"BIOS {k}", v, observed.get(k)) for k, v in sorted(wanted.items())]

    def execute(self, ctx: PhaseContext) -> Outcome:
        if ctx.record.stage == Stage.NONE:
            if not ctx.manifest.get("bios_settings"):
                # Nothing wanted: skip without reading a BIOS resource some BMCs do not offer
                # (sushy-tools' libvirt driver in its vmedia profile).
                return Skipped({"drift": []})
            current = self.observe(ctx)
            drifts = self.diff(ctx, current)
            compared = {"drift": [d.as_dict() for d in drifts]}
            delta = {d.component.removeprefix("BIOS "): d.expected for d in drifts if not d.matched}
            if not delta:
                return Skipped(compared)
            ctx.bmc().set_bios_attributes(delta)
            ctx.record.compared = compared
            ctx.save_fields("compared")
            return boot_ephemeral(ctx, Stage.REBOOTING)
        waiting = awaiting_boot(ctx)
        if waiting is not None:
            return waiting
        current = self.observe(ctx)
        drifts = [d for d in self.diff(ctx, current) if not d.matched]
        if drifts:
            names = ", ".join(f"{d.component}={d.actual!r} (want {d.expected!r})" for d in drifts)
            return Failure(f"BIOS settings not applied after the reset: {names}", component="bios")
        changes = [
            {"component": d["component"], "from": d["actual"], "to": d["expected"]}
            for d in ctx.record.compared.get("drift", [])
            if not d["matched"]
        ]
        return Done(changes=changes, compared=ctx.record.compared)


class BootDisk(Phase):
    """Boot the installed OS from disk."""

    def execute(self, ctx: PhaseContext) -> Outcome:
        if ctx.record.stage == Stage.NONE:
            alive = is_alive(ctx.node, HOST_OS)
            if alive is not None:
                return Skipped({"agent": f"host OS already up (boot {alive.boot_id[:8]})"})
            # A virtual CD left in would boot the ephemeral ISO again on BMCs that keep the
            # override (sushy-tools reads "Once" back as "Continuous").
            boot_path.release_medium(ctx.bmc(), ctx.manifest)
            return reboot_into(ctx, "Hdd", Stage.REBOOTING)
        return Done(changes=[{"component": "boot", "from": EPHEMERAL, "to": "disk"}])
