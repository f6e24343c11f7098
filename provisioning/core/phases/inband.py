"""In-band phases: what Greenlight does through the agent inside the node."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from agent import protocol
from fleet.models import Node

from ...agents import link as agent_link
from ...agents.link import EPHEMERAL, HOST_OS, is_alive, live_session
from ...agents.redaction import output_last_line, output_tail, redactor_for, relayed_by
from ...boot.credentials import HOST_CREDENTIAL_ID, mint_host_credential
from ...choices import CommandStatus, RunKind, Stage
from ...models import AgentCommand
from ...outcomes import Done, Failure, NeedsPerson, Outcome, Skipped, TransientFailure, Wait
from .. import erase_reports, firmware_targets
from ..erase_reports import EraseReport
from ..inventory import record_inband
from ..phase_state import FlashedDevices
from .base import Drift, Phase, PhaseContext, PhaseInfo
from .common import awaiting_boot, boot_ephemeral, ensure_ephemeral

# A safety net: the agent pushes its result, which nudges the run at once.
COMMAND_LOOK_S = 300.0
# Node seconds a sent command may stay silent before Greenlight asks the agent directly.
SILENCE_S = 120.0
INVENTORY_KEYS = {"nic": "nics", "dpu": "dpus", "nvme": "drives"}


def send_command(
    ctx: PhaseContext, kind: str, params: dict, stage: Stage, resume: dict | None = None
) -> Outcome:
    """Hand a command to the live agent and wait for its result in `stage`; `resume`: the
    phase's resume state for that command, written with it (a resumed look never reads one
    without the other)."""
    session = live_session(ctx.node)
    if session is None:
        return TransientFailure("no agent is checked in", kind="AgentUnavailable")
    command = agent_link.send(session, ctx.run, ctx.record.phase, kind, params)
    ctx.set_stage(stage, command=command, **({} if resume is None else {"resume": resume}))
    return Wait(COMMAND_LOOK_S, f"agent running {kind}", safety_net=True)


def send_in_ephemeral(
    ctx: PhaseContext, stage: str, kind: str, params: dict, next_stage: Stage
) -> Outcome:
    """Send a command that only the ephemeral environment may run, rebooting into it first."""
    if stage == Stage.REBOOTING:
        waiting = awaiting_boot(ctx, EPHEMERAL)
        if waiting is not None:
            return waiting
    reboot = ensure_ephemeral(ctx, Stage.REBOOTING)
    if reboot is not None:
        return reboot
    return send_command(ctx, kind, params, next_stage)


def command_outcome(ctx: PhaseContext) -> AgentCommand | Outcome:
    """The finished command of this stage, or the Outcome to return while it is not finished."""
    command = ctx.record.command
    if command is None:
        return Failure("the phase lost track of its agent command")
    if not ctx.command_fresh:
        command.refresh_from_db()
    waiting = (CommandStatus.QUEUED, CommandStatus.SENT)
    if command.status in waiting and ctx.stage_elapsed() > SILENCE_S:
        command = agent_link.refresh(command)
    if command.status in (CommandStatus.QUEUED, CommandStatus.SENT):
        return Wait(COMMAND_LOOK_S, f"agent running {command.kind}", safety_net=True)
    if command.status == CommandStatus.LOST:
        # The agent rebooted or restarted under the command: observe again from the start.
        ctx.set_stage(Stage.NONE, command=None)
        return TransientFailure(f"the agent lost command {command.kind}", kind="AgentLost")
    return command


class WaitForAgent(Phase):
    """The node booted the ephemeral environment and its agent checked in; record inventory."""

    def execute(self, ctx: PhaseContext) -> Outcome:
        session = is_alive(ctx.node)
        if session is None:
            return Wait(60, "waiting for agent check-in after PXE boot", safety_net=True)
        was_up = session.created_at < ctx.run.created_at
        changed = record_inband(ctx.node, agent_link.inventory(session))
        compared = {"agent": f"{session.environment}, boot {session.boot_id[:8]}"}
        compared["inventory_rows_changed"] = len(changed)
        return Skipped(compared) if was_up else Done(compared=compared)


class InbandFirmware(Phase):
    """NIC, DPU or NVMe firmware, flashed by the agent with the vendor's tool.

    Each device answers to its own model's target where the manifest has one (two drive makers
    in one node get two artifacts), else to the kind's; a device no target covers is left alone.
    """

    auditable = True

    def __init__(self, info: PhaseInfo):
        super().__init__(info)
        self.kind = info.name.removesuffix("_firmware")

    def target(self, ctx: PhaseContext) -> dict[str, str] | None:
        return (ctx.manifest.get("firmware") or {}).get(self.kind)

    def observe(self, ctx: PhaseContext) -> list[dict[str, Any]]:
        session = live_session(ctx.node)
        if session is None:
            raise agent_link.AgentUnavailable(f"no agent is checked in for {ctx.node.serial}")
        return agent_link.inventory(session).get(INVENTORY_KEYS[self.kind], [])

    def diff(self, ctx: PhaseContext, observed: list[dict[str, Any]]) -> list[Drift]:
        candidates = firmware_targets.for_agent(self.kind, self.target(ctx))
        drifts = []
        for i, device in enumerate(observed):
            wanted = protocol.firmware_target_for(device, candidates)
            if wanted is not None:
                name = device.get("name") or f"{self.kind} {i}"
                drifts.append(Drift(name, wanted["version"], device.get("firmware")))
        return drifts

    def execute(self, ctx: PhaseContext) -> Outcome:
        target = self.target(ctx)
        if target is None:
            return Skipped({"reason": f"the manifest sets no {self.kind} firmware"})
        stage = ctx.record.stage
        if stage == Stage.NONE:
            drifts = self.diff(ctx, self.observe(ctx))
            skipped = ctx.no_delta(drifts)
            if skipped is not None:
                return skipped
            params = {
                "component": self.kind,
                "targets": firmware_targets.for_agent(self.kind, target),
            }
            return send_command(ctx, protocol.FLASH_FIRMWARE, params, Stage.FLASHING)
        if stage == Stage.FLASHING:
            return self.flashed(ctx)
        if stage in (Stage.REBOOTING, Stage.POWER_CYCLE):
            waiting = awaiting_boot(ctx)
            if waiting is not None:
                if stage == Stage.POWER_CYCLE:
                    return NeedsPerson(
                        f"AC power cycle needed: the {self.kind.upper()} firmware needs power "
                        "removed from the node",
                        recheck_seconds=120,
                    )
                return waiting
            return self.verify(ctx)
        return Failure(f"unknown stage {stage!r}")

    def flashed(self, ctx: PhaseContext) -> Outcome:
        command = command_outcome(ctx)
        if not isinstance(command, AgentCommand):
            return command
        result = command.result or {}
        if command.status == CommandStatus.FAILED:
            device = result.get("failed_device") or self.kind
            tail = output_last_line(command)
            return Failure(f"{device}: firmware update failed: {tail}", component=device)
        flashed = FlashedDevices.from_agent(result.get("flashed") or [])
        ctx.record.resume = flashed.into(ctx.record.resume)
        ctx.save_fields("resume")
        if not flashed.flashed:
            return Skipped(ctx.record.compared)
        if result.get("needs_power_cycle"):
            ctx.set_stage(Stage.POWER_CYCLE, boot_id_before=command.session.boot_id)
            return NeedsPerson(
                f"AC power cycle needed: the {self.kind.upper()} firmware needs power removed "
                "from the node"
            )
        if result.get("needs_reset"):
            return boot_ephemeral(ctx, Stage.REBOOTING)
        return self.verify(ctx)

    def verify(self, ctx: PhaseContext) -> Outcome:
        session = live_session(ctx.node)
        if session is None:
            raise agent_link.AgentUnavailable(f"no agent is checked in for {ctx.node.serial}")
        # The agent's inventory after the update is what the node now holds: record it, so the
        # stored parts carry the new firmware whether or not the update took.
        observed = agent_link.inventory(session)
        record_inband(ctx.node, observed)
        devices = observed.get(INVENTORY_KEYS[self.kind], [])
        behind = [d for d in self.diff(ctx, devices) if not d.matched]
        if behind:
            names = ", ".join(f"{d.component} at {d.actual}, not {d.expected}" for d in behind)
            return Failure(
                f"{self.kind} firmware not at its target after the update: {names}",
                component=behind[0].component,
            )
        Node.objects.filter(pk=ctx.node.pk).update(attention="")
        changes = [f.as_change() for f in FlashedDevices.of(ctx.record.resume).flashed]
        return Done(changes=changes, compared=ctx.record.compared)


class SecureErase(Phase):
    """Crypto-erase every drive, when drives may hold data Greenlight did not put there."""

    def needed(self, ctx: PhaseContext) -> str:
        """Why this run must erase, or "" when it need not."""
        node = ctx.node
        if ctx.run.kind == RunKind.WIPE:
            return "tenant release"
        if node.last_erased_at is None:
            return "never erased by Greenlight"
        if node.allocated_at and node.allocated_at > node.last_erased_at:
            return "allocated to a tenant since the last erase"
        return ""

    def execute(self, ctx: PhaseContext) -> Outcome:
        stage = ctx.record.stage
        if stage == Stage.NONE:
            why = self.needed(ctx)
            if not why:
                return Skipped({"last_erased_at": ctx.node.last_erased_at.isoformat()})
            ctx.record.compared = {"reason": why}
            ctx.save_fields("compared")
            stage = Stage.READY
        if stage in (Stage.READY, Stage.REBOOTING):
            return send_in_ephemeral(ctx, stage, protocol.SECURE_ERASE, {}, Stage.ERASING)
        command = command_outcome(ctx)
        if not isinstance(command, AgentCommand):
            return command
        drives = (command.result or {}).get("drives", [])
        ctx.record.compared = {**ctx.record.compared, "drives": drives}
        ctx.save_fields("compared")
        failed = [d for d in drives if d.get("result") != "passed"]
        # Certified whatever the outcome (a failed drive is on a wipe's certificate too); a
        # certifier may fail what the agent passed.
        passed = not failed and command.status == CommandStatus.DONE
        certified = erase_reports.certify(EraseReport(ctx.run, drives, passed=passed))
        if not failed:
            failed = certified
        if command.status == CommandStatus.FAILED or failed:
            first = (
                failed[0]
                if failed
                else {"serial": "drive", "verification": output_tail(command, 200)}
            )
            # The agent's words on the drive come from the node: quoted redacted.
            redact = redactor_for(ctx.node, relayed_by(command))
            return Failure(
                redact(f"drive {first.get('serial')}: erase failed: {first.get('verification')}"),
                component=f"NVMe {first.get('serial')}",
                permanent=True,
                # Data may still be on the drive: the node must never return to the pool.
                quarantine=ctx.run.kind == RunKind.WIPE,
            )
        Node.objects.filter(pk=ctx.node.pk).update(last_erased_at=timezone.now())
        changes = [
            {"component": f"NVMe {d['serial']}", "from": "data", "to": f"erased ({d['method']})"}
            for d in drives
        ]
        return Done(changes=changes, compared=ctx.record.compared)


class OsInstall(Phase):
    """Write the manifest's OS image, verified by sha256 and signature, to the boot disk."""

    auditable = True

    def observe(self, ctx: PhaseContext) -> str:
        session = live_session(ctx.node)
        if session is None:
            raise agent_link.AgentUnavailable(f"no agent is checked in for {ctx.node.serial}")
        return (agent_link.inventory(session).get("os_image") or {}).get("sha256", "")

    def diff(self, ctx: PhaseContext, observed: str) -> list[Drift]:
        image = ctx.manifest.get("os_image")
        return [Drift("os_image", image["sha256"], observed)] if image else []

    def execute(self, ctx: PhaseContext) -> Outcome:
        image = ctx.manifest.get("os_image")
        if image is None:
            return Skipped({"reason": "the manifest names no OS image"})
        stage = ctx.record.stage
        if stage == Stage.NONE:
            drifts = self.diff(ctx, self.observe(ctx))
            skipped = ctx.no_delta(drifts)
            if skipped is not None:
                return skipped
            stage = Stage.READY
        if stage in (Stage.READY, Stage.REBOOTING):
            # The installed OS's agent earns its session with this credential, which the
            # ephemeral agent writes into the install record on the boot disk.
            credential, _ = mint_host_credential(ctx.node, ctx.run)
            params = {**image, HOST_CREDENTIAL_ID: credential.pk}
            return send_in_ephemeral(ctx, stage, protocol.INSTALL_OS, params, Stage.INSTALLING)
        command = command_outcome(ctx)
        if not isinstance(command, AgentCommand):
            return command
        if command.status == CommandStatus.FAILED:
            return Failure(f"OS install failed: {output_last_line(command)}", component="os")
        before = ctx.record.compared.get("drift", [{}])[0].get("actual", "")
        return Done(
            changes=[{"component": "os_image", "from": before[:12], "to": image["sha256"][:12]}],
            compared=ctx.record.compared,
        )


class WaitForHostOs(Phase):
    """The node booted the installed OS and its agent checked in from there."""

    def execute(self, ctx: PhaseContext) -> Outcome:
        session = is_alive(ctx.node, HOST_OS)
        if session is None:
            return Wait(60, "waiting for the host OS agent to check in", safety_net=True)
        compared = {"agent": f"host OS, boot {session.boot_id[:8]}"}
        # The installed OS sees the parts as they will serve: the run's last observation.
        if session.inventory:
            compared["inventory_rows_changed"] = len(record_inband(ctx.node, session.inventory))
        if session.created_at < ctx.run.created_at:
            return Skipped(compared)
        return Done(compared=compared)
