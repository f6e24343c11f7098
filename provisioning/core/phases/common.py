"""Steps many phases share: rebooting into an environment and waiting for its agent."""

from __future__ import annotations

from ...agents.link import EPHEMERAL, HOST_OS, is_alive, live_session
from ...boot import path as boot_path
from ...boot.credentials import arm_for_boot
from ...choices import PhaseStatus, Stage
from ...models import AgentSession, PhaseRecord
from ...outcomes import Outcome, Wait
from ...redfish import PowerAction, PowerState, RedfishError, TaskState, boot
from ...redfish.errors import BmcUnreachable, SystemInPost
from ..phase_state import PowerOnRequests
from .base import PhaseContext

# A safety net: the agent's check-in after the reboot nudges the run at once.
BOOT_LOOK_S = 120.0
# iLO refuses boot changes while the host is in POST (tens of seconds after power-on): look
# again after this long; the phase's deadline bounds how often.
POST_LOOK_S = 15.0


def reboot_into(
    ctx: PhaseContext, target: str, next_stage: Stage, *, http_boot_uri: str = ""
) -> Outcome:
    """Boot the node once into `target` (a Redfish boot override target) and move to
    `next_stage` to await it. The override is read back before the reset."""
    bmc = ctx.bmc()
    session = live_session(ctx.node)
    refused = stage_boot(ctx, target, http_boot_uri=http_boot_uri)
    if refused is not None:
        return refused
    power = bmc.power_state()
    action = PowerAction.ON if power == PowerState.OFF else PowerAction.RESTART
    # The stage is saved before the reset: a worker dying right after it must not reset twice.
    before = ctx.record.stage
    ctx.set_stage(next_stage, boot_id_before=session.boot_id if session else "")
    # Armed before the reset, so a quick boot finds its credential redeemable (once), and once
    # more for the boot this run's power-on started if it has not checked in yet: it may still
    # find the credential armed for the next boot (a CI run caught it doing so on a busy host)
    # and is Greenlight's, not a contest.
    in_flight = action == PowerAction.RESTART and session is None and power_on_unredeemed(ctx)
    arm_for_boot(
        ctx.node.pk, [HOST_OS if target == "Hdd" else EPHEMERAL], boots=2 if in_flight else 1
    )
    try:
        bmc.reset(action)
    except RedfishError as exc:
        if not isinstance(exc, BmcUnreachable):
            # The BMC answered and refused (a 503 after retries, say): no reset happened, so
            # waiting for a new boot would only wait out the phase's time limit.
            ctx.set_stage(before)
        raise
    where = "the installed OS" if target == "Hdd" else "the ephemeral environment"
    return Wait(BOOT_LOOK_S, f"rebooting into {where}", safety_net=True)


def stage_boot(ctx: PhaseContext, target: str, *, http_boot_uri: str = "") -> Wait | None:
    """Set the node's next boot, once, to `target` and read it back (RedfishError when it did
    not hold); a Wait when the BMC refuses boot changes while the node is in POST."""
    bmc = ctx.bmc()
    try:
        staged = bmc.set_boot_override(target, once=True, http_boot_uri=http_boot_uri)
    except SystemInPost:
        return Wait(POST_LOOK_S, "the BMC refuses boot changes while the node is in POST")
    if "dell_oem" in staged.detail:
        # Dell's virtual-CD boot is a configuration-import job, not a Boot property: its read
        # back is the job, which must not have failed.
        if staged.task_monitor:
            job = bmc.task_status(staged.task_monitor)
            if job.state == TaskState.FAILED:
                words = "; ".join(job.messages) or job.raw_state
                raise RedfishError(staged.url, f"the iDRAC refused the virtual-CD boot: {words}")
    else:
        differs = boot.read_back_differs(bmc, target)
        if differs:
            raise RedfishError(bmc.transport.absolute(bmc.system_path()), differs)
    return None


def powered_on_into(ctx: PhaseContext, environment: str) -> bool:
    """Whether this run powered the node on with its boot set to `environment`'s medium, and
    no boot has checked in since: that boot is still to come, and a restart would only start
    it again (a second POST, minutes on an HGX server)."""
    power_on = ctx.run.phases.filter(phase="power_on", status=PhaseStatus.DONE).first()
    if power_on is None or PowerOnRequests.of(power_on.resume).boots_into != environment:
        return False
    return power_on_unredeemed(ctx, power_on)


def power_on_unredeemed(ctx: PhaseContext, power_on: PhaseRecord | None = None) -> bool:
    """Whether this run powered the node on (its power_on record, `power_on`, read when not
    given) and no boot has checked in since."""
    if power_on is None:
        power_on = ctx.run.phases.filter(phase="power_on", status=PhaseStatus.DONE).first()
    if power_on is None or power_on.started_at is None:
        return False
    since = AgentSession.objects.filter(node=ctx.node, created_at__gte=power_on.started_at)
    return not since.exists()


def boot_ephemeral(ctx: PhaseContext, next_stage: Stage) -> Outcome:
    """Reboot into the ephemeral environment by the manifest's boot method."""
    prepared = boot_path.prepare(ctx.bmc(), ctx.run, ctx.manifest)
    return reboot_into(ctx, prepared.target, next_stage, http_boot_uri=prepared.http_boot_uri)


def new_boot(ctx: PhaseContext, environment: str | None = None) -> AgentSession | None:
    """The agent session of a boot that began after this stage did, if it checked in."""
    sessions = AgentSession.objects.filter(
        node=ctx.node, revoked_at__isnull=True, created_at__gte=ctx.record.stage_started_at
    ).exclude(boot_id=ctx.record.boot_id_before)
    if environment:
        sessions = sessions.filter(environment=environment)
    return sessions.order_by("-created_at").first()


def awaiting_boot(ctx: PhaseContext, environment: str | None = None) -> Wait | None:
    """None once the node came back with a new boot; else a Wait saying what for."""
    if new_boot(ctx, environment) is not None:
        return None
    what = {EPHEMERAL: "ephemeral environment"}.get(environment or "", "agent")
    return Wait(BOOT_LOOK_S, f"waiting for {what} check-in after reboot", safety_net=True)


def ensure_ephemeral(ctx: PhaseContext, resume_stage: Stage) -> Outcome | None:
    """None when the ephemeral environment's agent is up; else reboot into it.

    Erasing drives and writing the OS image cannot happen from the OS on those drives.
    """
    if is_alive(ctx.node, EPHEMERAL):
        return None
    return boot_ephemeral(ctx, resume_stage)
