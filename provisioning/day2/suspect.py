"""Day 2: a node reported suspect in service is cordoned, drained, re-checked, then re-admitted
or sent to break/fix; a pre-allocation burn-in takes the same loop.

A report (a person or a health check through the API verb, or an Alertmanager alert) moves the
node from in service to releasing and starts a suspect run (RunKind.SUSPECT, plans.plan): its
drain phase cordons and drains the node from the scheduler and moves it on to provisioning; the
re-check is the gates on the installed OS, or a full reprovision before them when the profile's
`suspect_action` is "reprovision". A run that passes every gate awaits approval, or is re-admitted
at once when the profile returns nodes without a click (provisioning.core.completion); admission
resumes it in the scheduler (scheduler_sync). A run whose gates found a fault quarantines the
node and, here, sends it on to break/fix.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q

from fleet.choices import EventKind, NodeState
from fleet.events import record as record_event
from fleet.lifecycle import TransitionError, transition
from fleet.models import Manifest, Node

from ..choices import ACTIVE_RUN_STATUSES, TAKE_OUT_KINDS, RunKind
from ..core.run_end import How, RunEnding
from ..core.runs import RunError, start_run
from ..models import Run

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Who may report a node suspect: pulling a node out of service is a quarantine's right.
SUSPECT_PERM = "fleet.quarantine_node"
BURN_IN_PERM = "provisioning.request_burn_in"
REASON_MAX = 500


class SuspectRefused(Exception):
    """The report cannot start the loop now; the message says why."""


def active_suspect_run(node: Node) -> Run | None:
    """The node's suspect run still under way, if any."""
    return Run.objects.filter(
        node=node, kind=RunKind.SUSPECT, status__in=ACTIVE_RUN_STATUSES
    ).first()


def report_suspect(
    node: Node,
    reason: str,
    *,
    actor: User | None = None,
    actor_label: str = "",
    source: str = "api",
) -> Run:
    """Start the suspect-node loop on an in-service node: its suspect run, which drains it first.

    `actor` is checked for SUSPECT_PERM; None is a caller that authenticated otherwise (the
    Alertmanager bearer token) and names itself in `actor_label`.
    """
    if actor is not None and (not actor.is_authenticated or not actor.has_perm(SUSPECT_PERM)):
        raise PermissionDenied(f"you may not report nodes suspect ({SUSPECT_PERM})")
    reason = " ".join((reason or "").split())[:REASON_MAX]
    if not reason:
        raise SuspectRefused("a suspect report needs a reason")
    return _take_out(
        node,
        RunKind.SUSPECT,
        f"reported suspect ({source}): {reason}; cordon, drain and re-check",
        actor=actor,
        actor_label=actor_label,
        data={"suspect": source},
    )


def request_burn_in(node: Node, actor: User, reason: str = "") -> Run:
    """Burn in an unallocated in-service node before a tenant platform hands it out: drained,
    then the profile's gates (its burn-in soak among them) on the installed OS; re-admitted or
    sent to break/fix like a suspect node."""
    if actor is None or not actor.is_authenticated or not actor.has_perm(BURN_IN_PERM):
        raise PermissionDenied(f"you may not ask for a burn-in ({BURN_IN_PERM})")
    if node.tenant:
        # Whose node it is is not the caller's to learn.
        raise SuspectRefused(f"node {node.serial} is allocated to a tenant: no burn-in now")
    why = " ".join((reason or "").split())[:REASON_MAX]
    return _take_out(
        node,
        RunKind.BURN_IN,
        f"pre-allocation burn-in asked by {actor.get_username()}" + (f": {why}" if why else ""),
        actor=actor,
        data={"burn_in": True},
    )


def upgrade_in_service(node: Node, manifest: Manifest, *, actor: User | None, why: str) -> Run:
    """Take an in-service node out for a rolling upgrade to `manifest`: cordoned and drained,
    then reprovisioned and re-validated; re-admitted like a suspect node.

    The rollout that calls this checked the actor's right to reprovision when it was started.
    A node allocated to a tenant is refused: a reprovision may erase its drives.
    """
    if node.tenant:
        raise SuspectRefused(
            f"node {node.serial} is allocated to a tenant: a reprovision could erase its drives; "
            "release it first"
        )
    return _take_out(
        node,
        RunKind.UPGRADE,
        f"{why}: cordon, drain and reprovision to {manifest.version}",
        actor=actor,
        data={"upgrade": manifest.version},
        manifest=manifest,
    )


def _take_out(
    node: Node,
    kind: str,
    reason: str,
    *,
    actor: User | None,
    actor_label: str = "",
    data: dict[str, Any],
    manifest: Manifest | None = None,
) -> Run:
    """Move an in-service node to releasing and start its run of `kind` (drained first)."""
    if node.state != NodeState.IN_SERVICE:
        raise SuspectRefused(
            f"node {node.serial} is {node.get_state_display().lower()}, not in service: "
            f"a {RunKind(kind).label.lower()} takes only an in-service node"
        )
    try:
        with transaction.atomic():
            transition(
                node,
                NodeState.RELEASING,
                actor=actor,
                actor_label=actor_label,
                from_state=NodeState.IN_SERVICE,
                reason=reason,
                data=data,
            )
            # Started by the system, as a wipe run is: the reporter needs no right to start runs
            # (an alert has none); the reporter is named on the run and its events.
            run = start_run(node, kind=kind, manifest=manifest, move_node=False)
            if actor is not None:
                Run.objects.filter(pk=run.pk).update(started_by=actor)
    except (TransitionError, RunError) as exc:
        raise SuspectRefused(str(exc)) from None
    return run


def follow_run_end(ending: RunEnding) -> None:
    """run_end's follower: a failed take-out run may send its node to break/fix."""
    if ending.run is not None and ending.how == How.FAILED:
        run_failed(ending.run)


def run_failed(run: Run) -> None:
    """A suspect or burn-in run ended failed: a node its gates quarantined goes on to break/fix.

    A run that failed for another reason (BMC unreachable, drain timed out) leaves the node
    failed, for a person to retry: nothing says its hardware is at fault.
    """
    if run.kind not in TAKE_OUT_KINDS:
        return
    node = Node.objects.get(pk=run.node_id)
    if node.state != NodeState.QUARANTINED:
        return
    transition(
        node,
        NodeState.BREAK_FIX,
        actor_label="engine",
        reason=f"{RunKind(run.kind).label} failed ({run.last_error}); sent to repair",
        data={"run": run.pk},
    )


# -- Alertmanager ------------------------------------------------------------------------------

# Labels that may name the node, most specific first. `instance` is host:port in Prometheus.
NODE_LABELS = ("serial", "node", "hostname", "Hostname", "nodename", "instance")
MAX_ALERTS = 1000
STATUSES = ("firing", "resolved")


class AlertRejected(Exception):
    """The webhook body is not Alertmanager's webhook JSON; the message says where."""


@dataclass(frozen=True)
class AlertOutcome:
    """What one alert of a notification did."""

    index: int
    alertname: str
    status: str
    node: str | None
    outcome: str  # started, already, noted, ignored, unknown-node
    detail: str
    run: int | None = None


def parse_alerts(payload: Any) -> list[dict[str, Any]]:
    """The alerts of an Alertmanager webhook body (version 4), checked; AlertRejected otherwise."""
    if not isinstance(payload, dict):
        raise AlertRejected("the body must be a JSON object (Alertmanager's webhook JSON)")
    version = payload.get("version", "4")
    if version != "4":
        raise AlertRejected(
            f'version must be "4" (Alertmanager\'s webhook format), not {version!r}'
        )
    alerts = payload.get("alerts")
    if not isinstance(alerts, list):
        raise AlertRejected("alerts must be a list")
    if len(alerts) > MAX_ALERTS:
        raise AlertRejected(f"at most {MAX_ALERTS} alerts per notification, not {len(alerts)}")
    for index, alert in enumerate(alerts):
        where = f"alerts[{index}]"
        if not isinstance(alert, dict):
            raise AlertRejected(f"{where} must be an object")
        if alert.get("status") not in STATUSES:
            raise AlertRejected(
                f'{where}.status must be "firing" or "resolved", not {alert.get("status")!r}'
            )
        for key in ("labels", "annotations"):
            value = alert.get(key, {})
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise AlertRejected(f"{where}.{key} must be an object of strings")
    return alerts


def node_named_by(labels: dict[str, str]) -> Node | None:
    """The node an alert's labels name by serial, hostname or instance (host:port)."""
    for key in NODE_LABELS:
        value = labels.get(key, "").strip()
        if key == "instance":
            # "gpu-001:9100", "[::1]:9100": the host part; an IP is never a node's name here.
            value = value.rsplit(":", 1)[0] if value.count(":") == 1 else value
        if not value:
            continue
        node = (
            Node.objects.filter(Q(serial=value) | Q(hostname=value))
            .exclude(state=NodeState.DECOMMISSIONED)
            .first()
        )
        if node is not None:
            return node
    return None


def alert_reason(alert: dict[str, Any]) -> str:
    """One line saying what fired: the alert's name and its summary (or description)."""
    labels, notes = alert.get("labels", {}), alert.get("annotations", {})
    name = labels.get("alertname") or "alert"
    words = notes.get("summary") or notes.get("description") or ""
    return f"{name}: {words}" if words else name


def receive_alerts(
    payload: Any, *, actor: User | None = None, actor_label: str = "alertmanager"
) -> list[dict[str, Any]]:
    """Act on an Alertmanager notification: each firing alert naming an in-service node starts
    the suspect loop on it; a resolved one is noted on the node (the re-check goes on: a fault
    that comes and goes is what it is for). One outcome per alert, in order."""
    outcomes = []
    for index, alert in enumerate(parse_alerts(payload)):
        outcomes.append(asdict(_one_alert(index, alert, actor, actor_label)))
    return outcomes


def _one_alert(index: int, alert: dict[str, Any], actor, actor_label: str) -> AlertOutcome:
    labels = alert.get("labels", {})
    status = alert["status"]
    name = labels.get("alertname", "")
    reason = alert_reason(alert)
    node = node_named_by(labels)
    if node is None:
        named = {k: labels[k] for k in NODE_LABELS if labels.get(k)}
        return AlertOutcome(
            index, name, status, None, "unknown-node",
            f"no node has the serial or hostname of {named or 'these labels'}",
        )  # fmt: skip
    label = actor_label if actor is None else ""
    if status == "resolved":
        record_event(
            node,
            EventKind.UPDATED,
            actor=actor,
            actor_label=label,
            message=f"alert resolved: {reason}",
            data={"alert": name, "status": status},
        )
        return AlertOutcome(index, name, status, node.serial, "noted", "recorded on the node")
    running = active_suspect_run(node)
    if running is not None:
        # Alertmanager repeats a firing alert until it resolves: the loop already runs.
        return AlertOutcome(
            index, name, status, node.serial, "already",
            f"suspect run {running.pk} is under way", running.pk,
        )  # fmt: skip
    try:
        run = report_suspect(node, reason, actor=actor, actor_label=label, source="alertmanager")
    except SuspectRefused as exc:
        record_event(
            node,
            EventKind.UPDATED,
            actor=actor,
            actor_label=label,
            message=f"alert firing, no suspect check started: {reason} ({exc})",
            data={"alert": name, "status": status},
        )
        return AlertOutcome(index, name, status, node.serial, "ignored", str(exc))
    return AlertOutcome(
        index, name, status, node.serial, "started",
        f"suspect run {run.pk} started: cordon, drain, re-check", run.pk,
    )  # fmt: skip
