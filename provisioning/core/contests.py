"""A boot credential redeemed twice for one boot Greenlight ordered: neither boot is trusted.

The second redemption is someone else holding the secret (it was seen on the wire, in an iPXE
answer, in a log) or the node rebooting on its own. Greenlight cannot tell which boot is the
real one, so the run stops for a person: the credential and every session it earned end, the
node says why, and a new run mints a new credential. A host-OS credential presented while no
run drives the node is the tenant's own reboot: refused, not contested.
"""

from __future__ import annotations

from django.db import transaction

from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.events import truncate
from fleet.models import Node

from ..boot import credentials as boot_credentials
from ..choices import ACTIVE_RUN_STATUSES, AgentEnvironment
from ..models import BootCredential, Run
from .runs import abort_run

ATTENTION_LIMIT = 300


def settle(credential: BootCredential, boot_id: str, remote: str) -> str | None:
    """Stop what the contested credential served; the reason shown on the node, or None when
    the redemption is only refused (a host OS rebooting with no run)."""
    node = credential.node
    run = Run.objects.filter(node=node, status__in=ACTIVE_RUN_STATUSES).first()
    if credential.environment == AgentEnvironment.HOST_OS and run is None:
        return None
    first = credential.redeemed_boot[:8] or "unknown"
    reason = truncate(
        f"someone else redeemed this node's boot credential: boot {boot_id[:8] or 'unknown'} "
        f"from {remote or 'an unknown address'} presented it after boot {first} had, with no "
        "reboot ordered between; neither boot is trusted, and a new run mints a new credential",
        ATTENTION_LIMIT,
    )
    with transaction.atomic():
        boot_credentials.contest(credential)
        Node.objects.filter(pk=node.pk).update(attention=reason)
        record_event(
            node,
            EventKind.ATTENTION,
            actor_label=f"agent@{remote}" if remote else "agent",
            message=reason,
            data={"remote": remote, "environment": credential.environment, "contested": True},
        )
        if run is not None:
            abort_run(run, actor=None, reason=reason)
    return reason
