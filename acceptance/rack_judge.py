"""The rack-wide verdict from the rows the gate collected (rack_gate): each compute tray's reports
judged together by acceptance.rack_fabric, each power shelf's output as its BMC read it, and,
where the rack's profile asks for it, the head tray's dcgmi mndiag run (acceptance.rack_mndiag).

A tray is named by its member number ("tray c05", with its serial); its IMEX address is the one
of its own (`hostname -I`) that the domain's node list holds, so a tray left out of that list is
named too. A shelf whose BMC did not answer is unknown; one whose output is off or unhealthy (a
shelf that tripped) fails the rack, named.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fleet.choices import NodeKind
from fleet.models import Node
from fleet.rack_scale import member_label
from provisioning.choices import CommandStatus
from provisioning.models import AgentCommand
from provisioning.rack_models import RackRun
from provisioning.redfish import RedfishError
from provisioning.redfish.bmc import bmc_session

from . import rack_mndiag
from .choices import Verdict
from .parsers import PARSERS
from .parsers.base import Finding, Severity
from .rack_fabric import NVL72, UNKNOWN, DomainShape, TrayReport, judge_rack_fabric
from .rack_models import RackVerdict

# The GB200 NVL72's wiring: each GPU has one link to each of a switch tray's two NVSwitch chips.
LINKS_PER_SWITCH_TRAY = 2
NAMED = 5  # findings a summary names before "and N more"


def shape_of(rack_run: RackRun) -> DomainShape:
    """The domain a rack of this SKU holds: its declared compute trays, each member SKU's GPUs,
    two links per GPU for each declared switch tray."""
    declared = {m.kind: m for m in rack_run.rack.system.sku.members.select_related("member_sku")}
    compute, switches = declared.get(NodeKind.COMPUTE_TRAY), declared.get(NodeKind.SWITCH_TRAY)
    if compute is None:
        return NVL72
    return DomainShape(
        trays=compute.count,
        gpus_per_tray=compute.member_sku.gpu_count or NVL72.gpus_per_tray,
        links_per_gpu=LINKS_PER_SWITCH_TRAY * switches.count if switches else NVL72.links_per_gpu,
    )


def tray_name(tray: Node) -> str:
    """How the verdict names a compute tray: "c05" (printed "tray c05 (serial ...)")."""
    return f"c{tray.member_index or 0:02d}"


def tray_outputs(verdict: RackVerdict, trays: list[Node]) -> list[tuple[str, str, dict[str, str]]]:
    """Each compute tray's (name, serial, outputs by tool); {} where its command never finished."""
    rows = {r.node_id: r for r in verdict.trays.select_related("command")}
    named = []
    for tray in trays:
        command = rows[tray.pk].command if tray.pk in rows else None
        found = None
        if command is not None and command.status == CommandStatus.DONE:
            found = (command.result or {}).get("outputs")
        named.append((tray_name(tray), tray.serial, found if isinstance(found, dict) else {}))
    return named


def tray_reports(verdict: RackVerdict, trays: list[Node]) -> list[TrayReport]:
    """Every compute tray's parsed reports; a tray whose command never finished reports nothing."""
    return reports_from(tray_outputs(verdict, trays))


def tray_addresses(named: list[tuple[str, str, dict[str, str]]]) -> dict[str, str]:
    """Each reporting tray's address by its name: the one of its own (`host-addresses`) that
    some tray's IMEX node list holds, else its first."""
    listed = set()
    for _, _, outputs in named:
        if "imex" in outputs:
            parsed = PARSERS["imex"](outputs["imex"])
            if not parsed.error:
                listed |= {node["address"] for node in parsed.metrics["nodes"].values()}
    out = {}
    for name, _, outputs in named:
        own = str(outputs.get("host-addresses") or "").split()
        if own:
            out[name] = next((a for a in own if a in listed), own[0])
    return out


def reports_from(named: list[tuple[str, str, dict[str, str]]]) -> list[TrayReport]:
    """TrayReports from each tray's (name, serial, outputs by tool), each with its IMEX address
    (tray_addresses) and its host name."""
    addresses = tray_addresses(named)
    reports = []
    for name, serial, outputs in named:
        address = addresses.get(name, "")
        hostname = next(iter(str(outputs.get("hostname") or "").split()), "")
        tools = {tool: text for tool, text in outputs.items() if tool != "host-addresses"}
        reports.append(TrayReport.from_outputs(name, tools, serial, address, hostname))
    return reports


def mndiag_output(verdict: RackVerdict) -> tuple[str | None, str, str]:
    """The head tray's dcgmi mndiag output (None: none came back), the tray, and why not.
    Read from the rows: this look may have sent or lost the command after `verdict` was read."""
    sent = RackVerdict.objects.filter(pk=verdict.pk).values_list("mndiag_command", flat=True)
    command = AgentCommand.objects.select_related("node").filter(pk__in=sent).first()
    if command is None:
        return None, "", "no tray ran it: not every compute tray reported"
    head = tray_name(command.node)
    found = (command.result or {}).get("outputs") if command.status == CommandStatus.DONE else None
    text = found.get("mndiag") if isinstance(found, dict) else None
    if not isinstance(text, str):
        said = (command.output or "").strip().splitlines()
        why = said[-1][:200] if said else f"its command is {command.get_status_display().lower()}"
        return None, head, f"tray {head} ran it: {why}"
    return text, head, ""


def read_shelf(shelf: Node) -> dict[str, Any]:
    """One power shelf's output as its BMC's chassis reports it (PowerState, Status.Health)."""
    seen: dict[str, Any] = {
        "node": shelf.pk,
        "serial": shelf.serial,
        "member_index": shelf.member_index,
    }
    try:
        with bmc_session(shelf) as client:
            chassis = client.chassis() or {}
    except RedfishError as exc:
        return {**seen, "error": exc.reason}
    status = chassis.get("Status") or {}
    return {**seen, "power_state": chassis.get("PowerState"), "health": status.get("Health")}


def shelf_findings(shelves: list[Node], seen: list[dict[str, Any]] | None) -> list[Finding]:
    """A finding for each shelf whose output is not on and healthy, or that was not read."""
    by_node = {row.get("node"): row for row in seen or []}
    out = []
    for shelf in shelves:
        label, part = member_label(shelf), f"power shelf {shelf.member_index}"
        row = by_node.get(shelf.pk)
        if row is None or row.get("error"):
            why = row.get("error") if row else "not read"
            out.append(Finding(part, "power_shelf", f"{label}: its output is unknown: {why}",
                               Severity.CRITICAL, UNKNOWN, shelf.serial))  # fmt: skip
        elif row.get("power_state") != "On" or row.get("health") != "OK":
            message = (
                f"{label}: output {row.get('power_state') or '?'}, health "
                f"{row.get('health') or '?'}: the shelf tripped or is failing"
            )
            out.append(Finding(part, "power_shelf", message, Severity.CRITICAL,
                               "power_shelf_down", shelf.serial))  # fmt: skip
    return out


def judge(
    rack_run: RackRun,
    verdict: RackVerdict,
    trays: list[Node],
    shelves: list[Node],
    now: datetime,
    mndiag_required: bool = False,
) -> None:
    """Judge the rack on what was collected and write the verdict (once)."""
    shape = shape_of(rack_run)
    reports = tray_reports(verdict, trays)
    fabric = judge_rack_fabric(reports, shape)
    findings = fabric.findings + shelf_findings(shelves, verdict.shelves)
    mndiag: dict[str, Any] = {"required": False}
    if mndiag_required:
        output, head, why = mndiag_output(verdict)
        found, mndiag = rack_mndiag.judge(reports, output, shape.gpus_per_tray, head, why)
        findings += found
    faults = [f for f in findings if f.severity == Severity.CRITICAL and f.code != UNKNOWN]
    unknown = [f for f in findings if f.code == UNKNOWN]
    if faults:
        result, named = Verdict.FAIL, faults
    elif unknown:
        result, named = Verdict.ERROR, unknown
    else:
        result, named = Verdict.PASS, []
    if named:
        more = f" (and {len(named) - NAMED} more)" if len(named) > NAMED else ""
        summary = "; ".join(f.message for f in named[:NAMED]) + more
    else:
        cluster, _, clique = next(iter(fabric.metrics.get("domain") or {"?/?": 0})).rpartition("/")
        summary = (
            f"{fabric.metrics.get('gpus_in_domain', 0)} GPUs of {len(trays)} compute trays in "
            f"clique {clique} of cluster {cluster}, every link up, IMEX lists every tray; "
            f"{len(shelves)} power shelves on"
        )
        if mndiag_required:
            summary += (
                f"; dcgmi mndiag passed on {mndiag.get('gpus', 0)} GPUs of "
                f"{mndiag.get('hosts', 0)} trays"
            )
    metrics = {**fabric.metrics, "shelves": len(shelves), "unknown": [f.message for f in unknown],
               "mndiag": mndiag}  # fmt: skip
    RackVerdict.objects.filter(pk=verdict.pk, verdict=Verdict.RUNNING).update(
        verdict=result,
        summary=summary[:500],
        findings=[f.to_dict() for f in findings],
        metrics=metrics,
        judged_at=now,
    )
    verdict.refresh_from_db()
