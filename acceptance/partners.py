"""Whom a node runs its multi-node gate (the fabric) with: healthy nodes of its rack and SKU."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleet.choices import EventKind, NodeState
from fleet.events import record as record_event
from fleet.models import Node

from .fabric import FabricPartners, choose_partners

if TYPE_CHECKING:
    from provisioning.core.phases.base import PhaseContext

# States of a healthy node going through the pipeline beside this one: it runs NCCL with them.
# A failed, quarantined or broken node is no partner: a slow pair would blame a good node.
PIPELINE_STATES = (NodeState.PROVISIONING, NodeState.VALIDATING, NodeState.AWAITING_APPROVAL)


def partner_choice(node: Node) -> FabricPartners:
    """Whom this node runs NCCL with, from healthy nodes of its rack and SKU.

    Nodes in the pipeline pair by the rack's plan; when they give fewer than two partners (a
    lone node re-validated after a tenant release), in-service nodes no tenant holds are
    borrowed. A tenant's node is never borrowed: its jobs and data are the tenant's.
    """
    if node.rack_id is None:
        return FabricPartners((), ())
    rack = Node.objects.filter(rack_id=node.rack_id, sku_id=node.sku_id).exclude(pk=node.pk)
    peers = rack.filter(state__in=PIPELINE_STATES).values_list("serial", flat=True)
    spare = rack.filter(state=NodeState.IN_SERVICE, tenant="").values_list("serial", flat=True)
    return choose_partners(node.serial, list(peers), list(spare))


def fabric_partners(node: Node) -> list[str]:
    """The serials this node runs NCCL with (see partner_choice)."""
    return partner_choice(node).all


def lend(ctx: PhaseContext, partners: FabricPartners) -> None:
    """Say on each borrowed in-service node that it is lent to this node's fabric gate."""
    gate_s = 60 * ctx.node.sku.nic_count
    for borrowed in Node.objects.filter(serial__in=partners.borrowed):
        record_event(
            borrowed,
            EventKind.FABRIC_PARTNER,
            actor_label="engine",
            message=f"lent to {ctx.node.serial} as NCCL partner for its fabric gate "
            f"(about {gate_s} s, one run per rail)",
            data={"run": ctx.run.pk, "node": ctx.node.serial},
        )
