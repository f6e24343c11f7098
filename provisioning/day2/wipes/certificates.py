"""Tenant release: filing a wipe request, and the certificate each wiped node ends with.

A wipe request moves each node from in service to releasing and starts a wipe run on it; the run
drains the node (phases/drain.py), erases every drive (phases/inband.SecureErase, which calls
`erase_finished` here), reimages and re-validates it. The certificate is written once, passed or
failed; only who approved the node back into service is filled in afterwards, once.

Filing the request, which starts the runs, is provisioning/day2/wipes/requests.py. This module follows
run_end (`follow_run_end`): a wipe run that ends or reopens, a node that enters service.

The certificate speaks of the erase alone. The request follows its nodes to the end (`settle`):
returned only when every node is back in service, failed with the node and the reason otherwise.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from fleet.choices import ComponentKind, EventKind, NodeState
from fleet.events import record as record_event
from fleet.lifecycle import transition
from fleet.models import Component, Node

from ... import schedulers
from ...agents.redaction import redactor_for
from ...choices import (
    ERASE_PURPOSE,
    ERASE_STANDARD,
    CertificateResult,
    EraseTechnique,
    RunKind,
    RunStatus,
    WipeStatus,
)
from ...core.erase_reports import EraseReport
from ...core.run_end import How, RunEnding
from ...models import Run, WipeCertificate, WipeRequest

logger = logging.getLogger(__name__)

# What a certificate proves, in its own words: a passed erase is not a node back in service.
CERTIFICATE_SCOPE = (
    "This certificate covers the erase of the drives listed, and only that. Whether the node "
    "was reimaged, re-validated and returned to service is stated on wipe request {wipe}."
)
# The wipe run's phases that bring what a tenant could change back to the manifest: they run
# before the erase, so the certificate written at the erase lists them.
RESTORING_PHASES = (
    "bmc_firmware", "bios_firmware", "hgx_firmware", "bios_settings",
    "nic_firmware", "dpu_firmware", "nvme_firmware",
)  # fmt: skip
PASSED = CertificateResult.PASSED
FAILED = CertificateResult.FAILED


class WipeError(Exception):
    """A wipe run that no wipe request accounts for."""


# -- the erase and its certificate -------------------------------------------------------------


def open_request_for(node: Node) -> WipeRequest | None:
    """The newest wipe request naming the node that has no certificate for it yet."""
    return (
        WipeRequest.objects.filter(nodes=node)
        .exclude(certificates__node=node)
        .order_by("-created_at", "-pk")
        .first()
    )


def follow_run_end(ending: RunEnding) -> None:
    """run_end's follower: a wipe run that failed, was aborted or reopens settles its requests;
    a node entering service names on its certificate who let it back in."""
    run = ending.run
    if ending.how in (How.FAILED, How.ABORTED) and run is not None:
        run_ended(run)
    elif ending.how == How.REOPENED and run is not None:
        run_reopened(run)
    elif ending.how == How.ENTERED_SERVICE and (run is None or run.kind == RunKind.WIPE):
        # A person's approval (no run) always settles; the profile's return, a wipe run's only.
        returned_to_service(ending.node, ending.actor)


def run_ended(run: Run) -> None:
    """A wipe run failed or was aborted: its request follows (failed, naming the node and why:
    the run's last error).

    Without this the tenant's request would say "in progress" forever. A retry of the run
    reopens it (run_reopened).
    """
    if run.kind != RunKind.WIPE:
        return
    for wipe in unsettled_requests(Node.objects.get(pk=run.node_id)):
        settle(wipe)


def run_reopened(run: Run) -> None:
    """A failed wipe run retried: its request is in progress again, unless an erase failed."""
    if run.kind == RunKind.WIPE:
        for wipe in unsettled_requests(Node.objects.get(pk=run.node_id)):
            settle(wipe)


def certify_erase(report: EraseReport) -> list[dict[str, Any]]:
    """core.erase_reports' certifier: a wipe run's erase ends in its certificate; the drives the
    certificate fails (an inventoried drive the agent never reported among them)."""
    if report.run.kind != RunKind.WIPE:
        return []
    certificate = erase_finished(report.run, report.drives, passed=report.passed)
    if certificate.result == CertificateResult.PASSED:
        return []
    return [d for d in certificate.drives if d["result"] != "passed"] or [
        {"serial": "drive", "verification": "no drive was erased"}
    ]


def erase_finished(run: Run, drives: list[dict[str, Any]], *, passed: bool) -> WipeCertificate:
    """Write the node's wipe certificate; when every drive passed, send the node on to reimage.

    `drives` are the agent's reports: {name, serial, model, method, tool, exit_code, result,
    verification, started_at, finished_at}. A drive the node's inventory lists but the agent
    did not report is on the certificate too, as failed. A failed certificate leaves the node in
    wiping: the engine fails the run and quarantines it.
    """
    already = WipeCertificate.objects.filter(run=run).first()
    if already is not None:
        return already  # a repeated look at an erase that was already certified
    node = Node.objects.get(pk=run.node_id)
    wipe = open_request_for(node)
    if wipe is None:
        raise WipeError(f"no open wipe request names node {node.serial}")
    # The agent's words on each drive come from the node: kept on the certificate redacted.
    entries = redactor_for(node).tree(certificate_drives(node, drives))
    ok = passed and bool(entries) and all(e["result"] == PASSED for e in entries)
    now = timezone.now()
    starts = [t for t in (_instant(e.get("started_at")) for e in entries) if t]
    ends = [t for t in (_instant(e.get("finished_at")) for e in entries) if t]
    with transaction.atomic():
        # The request's row is the lock: nodes of one request finish their erase at the same
        # time on different workers, and each must see the others' certificates when it settles
        # the request (without it, every one saw n-1 and the request stayed in progress).
        WipeRequest.objects.select_for_update().filter(pk=wipe.pk).first()
        certificate = WipeCertificate.objects.create(
            wipe_request=wipe,
            node=node,
            run=run,
            result=PASSED if ok else FAILED,
            drives=entries,
            # Versions as the BMC and the agent reported them: kept redacted, as the drives are.
            firmware_restored=redactor_for(node).tree(firmware_restored(run)),
            requested_by=wipe.requested_by.get_username() if wipe.requested_by else "",
            started_at=min(starts, default=run.started_at or now),
            finished_at=max(ends, default=now),
        )
        failed = [e["serial"] for e in entries if e["result"] != PASSED]
        record_event(
            node,
            EventKind.WIPE,
            actor_label="engine",
            message=(
                f"wipe certificate {certificate.pk}: {len(entries)} drive(s) erased and verified"
                if ok
                else f"wipe certificate {certificate.pk}: FAILED on {', '.join(failed) or 'no drive'}"
            ),
            data={
                "certificate": certificate.pk,
                "wipe_request": wipe.pk,
                "result": certificate.result,
            },
        )
        if ok:
            # The tenant's data is gone: the node belongs to nobody until it is allocated again.
            # A failed node keeps its tenant, since its data may still be on the drive.
            Node.objects.filter(pk=node.pk).update(
                last_erased_at=now, tenant="", allocation_ref="", allocated_at=None
            )
            transition(
                node,
                NodeState.PROVISIONING,
                actor_label="engine",
                from_state=NodeState.WIPING,
                reason="every drive crypto-erased and verified; reimaging from the manifest",
                data={"certificate": certificate.pk, "run": run.pk},
            )
        settle(wipe)
    return certificate


def firmware_restored(run: Run) -> list[dict[str, Any]]:
    """What the run's firmware and BIOS phases changed back to the manifest, in phase order."""
    records = run.phases.filter(phase__in=RESTORING_PHASES).order_by("order")
    return [
        {**change, "phase": record.phase}
        for record in records.only("phase", "changes")
        for change in record.changes or []
    ]


def certificate_drives(node: Node, drives: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The certificate's drive lines: each reported drive, then any inventoried drive missed."""
    entries = [drive_entry(d) for d in drives]
    reported = {d.get("serial") for d in drives}
    inventoried = Component.objects.filter(node=node, kind=ComponentKind.NVME).exclude(serial="")
    for part in inventoried.order_by("slot"):
        if part.serial not in reported:
            entries.append(
                drive_entry(
                    {
                        "name": part.slot,
                        "serial": part.serial,
                        "model": part.model,
                        "result": FAILED,
                        "verification": "not erased: the agent did not report this drive",
                    }
                )
            )
    return entries


def drive_entry(report: dict[str, Any]) -> dict[str, Any]:
    """One drive as the certificate states it (every key present, even when unknown)."""
    technique = str(report.get("method") or "")
    if technique in EraseTechnique.values:
        method = f"{ERASE_STANDARD}: {ERASE_PURPOSE} ({EraseTechnique(technique).label})"
    else:
        method = f"{ERASE_STANDARD}: {ERASE_PURPOSE} ({technique})" if technique else ""
    result = PASSED if report.get("result") == PASSED else FAILED
    return {
        "name": str(report.get("name") or ""),
        "model": str(report.get("model") or ""),
        "serial": str(report.get("serial") or ""),
        "method": method,
        "technique": technique,
        "tool": str(report.get("tool") or ""),
        "exit_code": report.get("exit_code"),
        "result": str(result),
        "verification": str(report.get("verification") or ""),
        "started_at": report.get("started_at") or None,
        "finished_at": report.get("finished_at") or None,
    }


def _instant(text: Any) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def unsettled_requests(node: Node) -> list[WipeRequest]:
    """The wipe requests naming the node whose status may still change."""
    return list(WipeRequest.objects.filter(nodes=node).exclude(status=WipeStatus.RETURNED))


def node_outcome(wipe: WipeRequest, node: Node) -> tuple[str, str]:
    """Where one node of a request stands: (status, reason); reason only for "failed".

    Failed: its erase failed (for good: data may be on the drive), or its latest run since the
    request failed or was aborted, or it sits quarantined, failed or decommissioned. Returned:
    its erase passed and it is in service. In progress otherwise.
    """
    certificate = (
        WipeCertificate.objects.filter(wipe_request=wipe, node=node).order_by("-pk").first()
    )
    if certificate is not None and certificate.result == FAILED:
        drives = ", ".join(d["serial"] for d in certificate.drives if d["result"] != PASSED)
        return (
            WipeStatus.FAILED,
            f"erase failed on {drives or 'no drive'} (certificate {certificate.pk})",
        )
    run = (
        Run.objects.filter(node=node, created_at__gte=wipe.created_at)
        .order_by("-created_at", "-pk")
        .first()
    )
    if run is not None and run.status in (RunStatus.FAILED, RunStatus.ABORTED):
        return WipeStatus.FAILED, run.last_error or f"run {run.pk} {run.get_status_display()}"
    if node.state in (NodeState.QUARANTINED, NodeState.FAILED, NodeState.DECOMMISSIONED):
        return WipeStatus.FAILED, f"node is {node.get_state_display().lower()}"
    if certificate is not None and node.state == NodeState.IN_SERVICE:
        return WipeStatus.RETURNED, ""
    return WipeStatus.IN_PROGRESS, ""


def settle(wipe: WipeRequest) -> WipeRequest:
    """Set the request's status from its nodes: failed if any node failed (the first by serial
    is named, with why), returned once every node is back in service, in progress otherwise.

    The request's row is locked while it is judged: its nodes finish on different workers.
    """
    with transaction.atomic():
        locked = WipeRequest.objects.select_for_update().get(pk=wipe.pk)
        outcomes = [(n, *node_outcome(locked, n)) for n in locked.nodes.order_by("serial")]
        failed = [(n, reason) for n, status, reason in outcomes if status == WipeStatus.FAILED]
        if failed:
            status, (node, reason) = WipeStatus.FAILED, failed[0]
        elif outcomes and all(status == WipeStatus.RETURNED for _, status, _ in outcomes):
            status, node, reason = WipeStatus.RETURNED, None, ""
        else:
            status, node, reason = WipeStatus.IN_PROGRESS, None, ""
        current = (locked.status, locked.failed_node_id, locked.failure_reason)
        if current == (status, node.pk if node else None, reason[:500]):
            return locked
        WipeRequest.objects.filter(pk=locked.pk).update(
            status=status, failed_node=node, failure_reason=reason[:500]
        )
        locked.status, locked.failed_node, locked.failure_reason = status, node, reason[:500]
        if status != current[0] or status == WipeStatus.FAILED:
            _say(locked, outcomes)
    return locked


def _say(wipe: WipeRequest, outcomes: list[tuple[Node, str, str]]) -> None:
    """An event on each node of the request when the request's status moves."""
    label = f"wipe request {wipe.pk} ({wipe.tenant}/{wipe.allocation_ref})"
    if wipe.status == WipeStatus.FAILED:
        message = f"{label} failed: node {wipe.failed_node.serial}: {wipe.failure_reason}"
    elif wipe.status == WipeStatus.RETURNED:
        message = f"{label} returned: every node erased and back in service"
    else:
        message = f"{label} in progress again"
    for node, _, _ in outcomes:
        record_event(
            node,
            EventKind.WIPE,
            actor_label="engine",
            message=message,
            data={"wipe_request": wipe.pk, "status": wipe.status},
        )


# -- back into service -------------------------------------------------------------------------


def returned_to_service(node: Node, approved_by: str) -> WipeCertificate | None:
    """Name who let a wiped node back into the pool on its certificate, and readmit it.

    Called when a person's approval (acceptance.decisions.approve) or the profile's automatic
    return (provisioning.core.completion) moves the node into service (follow_run_end). Only the
    certificate of the node's latest run, passed and not yet approved, is touched: `approved_by`
    is the one column filled after the certificate was written, and a conditional UPDATE fills it
    once.
    """
    for wipe in unsettled_requests(node):
        settle(wipe)
    latest = Run.objects.filter(node=node).order_by("-created_at", "-pk").first()
    if latest is None or latest.kind != RunKind.WIPE:
        return None
    filled = WipeCertificate.objects.filter(
        node=node, run=latest, result=PASSED, approved_by=""
    ).update(approved_by=approved_by[:150])
    if not filled:
        return None
    certificate = WipeCertificate.objects.get(node=node, run=latest)
    record_event(
        node,
        EventKind.WIPE,
        actor_label=approved_by[:100],
        message=f"wipe certificate {certificate.pk}: returned to service by {approved_by}",
        data={"certificate": certificate.pk},
    )
    # The scheduler hears of the node only once its return to service is committed.
    transaction.on_commit(lambda: readmit(node))
    return certificate


def readmit(node: Node) -> None:
    """Uncordon the node in the tenant scheduler; a refusal is recorded, not raised."""
    try:
        scheduler = schedulers.configured()
        scheduler.uncordon(node)
    except schedulers.SchedulerError as exc:
        logger.warning("node %s not uncordoned: %s", node.serial, exc)
        record_event(
            node,
            EventKind.ATTENTION,
            actor_label="engine",
            message=f"uncordon the node in the scheduler by hand: {exc}",
        )


# -- rendering -----------------------------------------------------------------------------------


def certificate_document(certificate: WipeCertificate) -> dict[str, Any]:
    """The certificate as its JSON download and printable page state it."""
    node = certificate.node
    wipe = certificate.wipe_request
    rack = node.rack
    return {
        "certificate": certificate.pk,
        "standard": ERASE_STANDARD,
        "purpose": ERASE_PURPOSE,
        "scope": CERTIFICATE_SCOPE.format(wipe=wipe.pk),
        "result": certificate.result,
        "node": {
            "serial": node.serial,
            "hostname": node.hostname,
            "sku": node.sku.name,
            "site": rack.site.name if rack else "",
            "rack": rack.name if rack else "",
            "position": node.position,
        },
        "tenant": wipe.tenant,
        "allocation_ref": wipe.allocation_ref,
        "wipe_request": wipe.pk,
        "run": certificate.run_id,
        "drives": certificate.drives,
        "firmware_restored": certificate.firmware_restored,
        "requested_by": certificate.requested_by,
        "approved_by": certificate.approved_by,
        "started_at": certificate.started_at.isoformat(),
        "finished_at": certificate.finished_at.isoformat(),
        "issued_at": certificate.created_at.isoformat(),
    }
