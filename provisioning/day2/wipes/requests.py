"""Filing a tenant's wipe request: each of its nodes moves to releasing and starts a wipe run.

What follows the filing (the erase, the certificate, settling the request) is provisioning/day2/wipes/certificates.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from fleet.choices import EventKind, NodeState
from fleet.events import record as record_event
from fleet.lifecycle import TransitionError, transition
from fleet.models import Node

from ...choices import RunKind, WipeStatus
from ...core.runs import RunError, start_run
from ...models import Run, WipeRequest

if TYPE_CHECKING:
    from django.contrib.auth.models import User

REQUEST_PERM = "provisioning.add_wiperequest"


class WipeRefused(Exception):
    """The wipe cannot be filed; `reasons` says why, one line per node or problem."""

    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


def request_wipe(
    nodes: Iterable[Node], tenant: str, allocation_ref: str, actor: User
) -> WipeRequest:
    """Release `nodes` of a tenant's allocation: drain, erase, reimage, re-validate each."""
    return file_wipe(nodes, tenant, allocation_ref, actor)[0]


def file_wipe(
    nodes: Iterable[Node], tenant: str, allocation_ref: str, actor: User
) -> tuple[WipeRequest, bool]:
    """`request_wipe`, also saying whether the request is new (False: the same one again)."""
    if actor is None or not actor.is_authenticated or not actor.has_perm(REQUEST_PERM):
        raise PermissionDenied("you are not allowed to request tenant-release wipes")
    tenant, allocation_ref = tenant.strip(), allocation_ref.strip()
    node_ids = {n.pk for n in nodes}
    missing = [
        text
        for text, absent in (
            ("a wipe needs the tenant", not tenant),
            ("a wipe needs the allocation reference", not allocation_ref),
            ("a wipe needs at least one node", not node_ids),
        )
        if absent
    ]
    if missing:
        raise WipeRefused(missing)
    existing = WipeRequest.objects.filter(tenant=tenant, allocation_ref=allocation_ref).first()
    if existing is not None:
        return _same_request(existing, node_ids), False
    fresh = list(Node.objects.filter(pk__in=node_ids).order_by("serial"))
    refusals = [reason for node in fresh for reason in refusals_for(node, tenant, allocation_ref)]
    if refusals:
        raise WipeRefused(refusals)
    try:
        with transaction.atomic():
            wipe = WipeRequest.objects.create(
                tenant=tenant,
                allocation_ref=allocation_ref,
                status=WipeStatus.IN_PROGRESS,
                requested_by=actor,
            )
            wipe.nodes.set(fresh)
            for node in fresh:
                _release(wipe, node, actor)
    except IntegrityError:
        # The unique (tenant, allocation_ref) constraint: the same request, sent twice at once
        # (an API client retrying), committed first. The same nodes make it the same wipe.
        existing = WipeRequest.objects.filter(tenant=tenant, allocation_ref=allocation_ref).first()
        if existing is None:
            raise
        return _same_request(existing, node_ids), False
    except (TransitionError, RunError) as exc:
        # Someone moved a node (or started a run on it) between the checks and the move.
        raise WipeRefused([str(exc)]) from None
    return wipe, True


def refusals_for(node: Node, tenant: str, allocation_ref: str) -> list[str]:
    """Why `node` cannot be released for this tenant's allocation; empty when it can."""
    reasons = []
    if node.tenant != tenant:
        # Another tenant's name is not ours to tell.
        owner = "another tenant" if node.tenant else "no tenant"
        reasons.append(f"node {node.serial} is allocated to {owner}, not {tenant}")
    elif node.allocation_ref and node.allocation_ref != allocation_ref:
        reasons.append(f"node {node.serial} is not part of allocation {allocation_ref}")
    if node.state != NodeState.IN_SERVICE:
        reasons.append(f"node {node.serial} is {node.get_state_display()}, not in service")
    return reasons


def _same_request(existing: WipeRequest, node_ids: set[int]) -> WipeRequest:
    """The existing request if it names exactly these nodes; a refusal otherwise."""
    theirs = set(existing.nodes.values_list("pk", flat=True))
    if theirs != node_ids:
        raise WipeRefused(
            [
                f"allocation {existing.tenant}/{existing.allocation_ref} already has wipe "
                f"request {existing.pk}, for other nodes"
            ]
        )
    return existing


def _release(wipe: WipeRequest, node: Node, actor: User) -> Run:
    """Move one node to releasing and start its wipe run (the run drains it first)."""
    transition(
        node,
        NodeState.RELEASING,
        actor=actor,
        from_state=NodeState.IN_SERVICE,
        reason=f"released by tenant {wipe.tenant} (allocation {wipe.allocation_ref})",
        data={"wipe_request": wipe.pk},
    )
    # The run is started by the system (a tenant platform token may start no other run); the
    # requester is recorded on it and on the request.
    run = start_run(node, kind=RunKind.WIPE, move_node=False)
    Run.objects.filter(pk=run.pk).update(started_by=actor)
    record_event(
        node,
        EventKind.WIPE,
        actor=actor,
        message=f"wipe requested for {wipe.tenant}/{wipe.allocation_ref}",
        data={"wipe_request": wipe.pk, "run": run.pk},
    )
    return run
