"""A power-cycle stage's member: a forced power cycle over Redfish that activates the firmware
the compute tray staged (GB200: its new images run only after the tray loses power).

The cycle is claimed by one conditional UPDATE before the BMC is asked, so a repeated or
redelivered message never cycles a tray twice; a worker that dies between the claim and the
answer leaves the member running until the stage's time limit names it.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from fleet.rack_scale import member_label

from ..boot.credentials import arm_for_boot
from ..choices import AgentEnvironment, RackMemberStatus
from ..rack_models import RackRunMember
from ..redfish import PowerAction, RedfishError
from ..redfish.bmc import bmc_session
from .messages import say, send_advance
from .stages import title


def power_cycle_member(member_id: int) -> bool:
    """Power-cycle one member if its cycle is still to be sent; True when this call sent it."""
    claimed = RackRunMember.objects.filter(
        pk=member_id, status=RackMemberStatus.RUNNING, cycle_sent_at__isnull=True
    ).update(cycle_sent_at=timezone.now())
    if not claimed:
        return False
    member = RackRunMember.objects.select_related(
        "node__rack__site", "stage__rack_run__rack__site", "stage__rack_run__started_by"
    ).get(pk=member_id)
    # The tray boots its installed OS again: its host credential may be redeemed by that boot
    # (an unordered boot redeeming it would read as a second machine and revoke it).
    arm_for_boot(member.node_id, [AgentEnvironment.HOST_OS])
    try:
        # ForceRestart (or PowerCycle) where the BMC allows it: the tray must lose power.
        with bmc_session(member.node) as client:
            client.reset(PowerAction.RESTART)
        status, reason = RackMemberStatus.DONE, ""
    except RedfishError as exc:
        status, reason = RackMemberStatus.FAILED, f"power cycle refused: {exc.reason}"
    settle_cycle(member, status, reason)
    return True


def settle_cycle(member: RackRunMember, status: str, reason: str) -> None:
    """Record how a member's power cycle went and wake its rack run."""
    stage = member.stage
    with transaction.atomic():
        if not RackRunMember.objects.filter(pk=member.pk, status=RackMemberStatus.RUNNING).update(
            status=status, reason=reason[:500], finished_at=timezone.now()
        ):
            return
        what = "power-cycled" if status == RackMemberStatus.DONE else reason
        say(
            stage.rack_run,
            f"{title(stage)}: {member_label(member.node)} {what}",
            node=member.node,
            stage=stage.index,
        )
        send_advance(stage.rack_run_id)
