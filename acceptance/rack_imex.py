"""The IMEX part of the rack fabric verdict: every tray READY and connected, as every tray sees it.

Each compute tray reports `nvidia-imex-ctl -N`, its own view of the whole IMEX domain. A peer
missing from the node list (left out of nodes_config.cfg, or never started) is a fault of that
peer; a node not READY or not connected is named once, with how many trays see it so, and as
its tray where the rack knows the tray's IMEX address. A tray whose view is missing or unreadable
is unknown (acceptance.rack_fabric).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .parsers.base import Finding, Severity

if TYPE_CHECKING:
    from .rack_fabric import TrayReport

UNKNOWN = "fabric_unknown"


def judge(trays: Sequence[TrayReport], expected_trays: int) -> list[Finding]:
    """Findings for the IMEX domain from every tray's view of it."""
    findings: list[Finding] = []
    names = {t.imex_address: t.name for t in trays if t.imex_address}
    # (part, code) -> the finding as the first tray saw it, and the trays that saw it.
    seen: dict[tuple[str, str], tuple[Finding, list[str]]] = {}
    views = 0
    for tray in trays:
        if tray.silent:
            continue  # already unknown as a whole (rack_fabric)
        report = tray.imex
        if report is None or report.error:
            why = f"unreadable ({report.error})" if report else "not reported"
            message = f"{tray.label}: nvidia-imex-ctl -N {why}: its IMEX view is unknown"
            findings.append(Finding(f"tray {tray.name}", "node", message, Severity.CRITICAL,
                                    UNKNOWN, tray.serial))  # fmt: skip
            continue
        views += 1
        for finding in _view(tray, report.metrics, names, expected_trays, report.findings):
            entry = seen.setdefault((finding.part, finding.code), (finding, []))
            entry[1].append(tray.name)
    for finding, viewers in seen.values():
        where = "every tray" if len(viewers) == views else f"{len(viewers)} of {views} trays"
        findings.append(Finding(finding.part, finding.kind, f"{finding.message} (as {where} see it)",
                                finding.severity, finding.code, finding.part_serial))  # fmt: skip
    return findings


def _view(
    tray: TrayReport,
    metrics: dict,
    names: dict[str, str],
    expected_trays: int,
    parsed: list[Finding],
) -> list[Finding]:
    """What one tray's IMEX report says is wrong, its nodes named as trays where known."""
    nodes = metrics["nodes"]
    listed = {node["address"] for node in nodes.values()}
    out = []
    if len(nodes) < expected_trays:
        missing = sorted(name for address, name in names.items() if address not in listed)
        whom = f": {', '.join(f'tray {n}' for n in missing)} missing" if missing else ""
        message = f"IMEX domain lists {len(nodes)} of {expected_trays} compute trays{whom}"
        out.append(Finding("IMEX domain", "node", message, Severity.CRITICAL, "imex_peer_missing"))
    for address, name in sorted(names.items(), key=lambda item: item[1]):
        if address not in listed:
            message = f"tray {name} ({address}) is not in the IMEX domain's node list"
            out.append(Finding(f"tray {name}", "node", message, Severity.CRITICAL,
                               "imex_peer_missing"))  # fmt: skip
    for finding in parsed:
        out.append(
            Finding(_named(finding.part, nodes, names), finding.kind,
                    _named(finding.message, nodes, names), finding.severity, finding.code)
        )  # fmt: skip
    return out


def _named(text: str, nodes: dict, names: dict[str, str]) -> str:
    """The parser's "IMEX node #5 (172.31.50.44)" with its tray: "(172.31.50.44, tray c06)"."""
    for node in nodes.values():
        name = names.get(node["address"])
        if name:
            text = text.replace(f"({node['address']})", f"({node['address']}, tray {name})")
    return text
