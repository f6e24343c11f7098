"""`nvidia-imex-ctl -N`: the IMEX domain as one node sees it, every node's status and each pair.

    Connectivity Table Legend:
    I - Invalid - Node wasn't reachable, no connection status available
    ...
    C - Connected - Ready for operation

    5/12/2025 06:08:10.580
    Nodes:
    Node #0   - 172.31.48.81    - READY                - Version: 570.172
    Node #1   - 172.31.48.98    - READY                - Version: 570.172

     Nodes From\\To  0   1
           0        C   C
           1        C   C

    Domain State: UP

Drivers before 570.172 print no "Version" column; -H adds the host name after the address. The
report ends with its "Domain State:" line, and the table has a row and a column for each node:
anything short of that was cut. A node not READY fails it; a pair not Connected fails the pair,
or the node when every pair it is in failed (a node down is not blamed on each of its peers);
a domain not UP fails the domain. Which tray an address is, the rack knows (rack_fabric).
"""

from __future__ import annotations

import re

from .base import Finding, ParseResult, Severity, blank_reason, failed, strip_launcher

TOOL = "imex"
LEGEND = "Connectivity Table Legend:"
NODE = re.compile(
    r"^Node #(?P<index>\d+)\s+-\s+(?P<address>\S+)(?:\s+\((?P<host>[^)]*)\))?"
    r"\s+-\s+(?P<status>[A-Z_]+)(?:\s+-\s+Version:\s*(?P<version>\S+))?\s*$"
)
HEADER = re.compile(r"^Nodes From\\To((?:\s+\d+)+)\s*$")
ROW = re.compile(r"^(?P<index>\d+)\s+(?P<cells>(?:(?:[A-Z]|![A-Z]!)\s*)+)$")
DOMAIN = re.compile(r"^Domain State:\s*(?P<state>\S+)\s*$")
CELLS = {
    "C": "connected",
    "I": "invalid (node not reachable)",
    "N": "never connected",
    "R": "recovering (connection lost)",
    "D": "disconnected",
    "A": "authenticating",
    "!V!": "version mismatch, communication disabled",
    "!M!": "node map mismatch, communication disabled",
}


def parse(text: str) -> ParseResult:
    """Read one node's `nvidia-imex-ctl -N` report into nodes, pairs and findings."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    lines = [strip_launcher(raw).strip() for raw in text.splitlines()]
    nodes: dict[int, dict] = {}
    columns: list[int] | None = None
    rows: dict[int, list[str]] = {}
    domain = None
    for line in lines:
        if m := NODE.match(line):
            nodes[int(m["index"])] = {
                "address": m["address"],
                "host": m["host"],
                "status": m["status"],
                "version": m["version"],
            }
        elif m := HEADER.match(line):
            columns = [int(n) for n in m.group(1).split()]
        elif columns is not None and (m := ROW.match(line)):
            rows[int(m["index"])] = m["cells"].split()
        elif m := DOMAIN.match(line):
            domain = m["state"]
    problem = _incomplete(lines, nodes, columns, rows, domain)
    if problem:
        return failed(TOOL, problem)
    assert columns is not None  # _incomplete said so
    versions = {n["version"] for n in nodes.values() if n["version"]}
    result = ParseResult(TOOL, version=next(iter(versions)) if len(versions) == 1 else None)
    result.metrics = {
        "domain_state": domain,
        "nodes": {str(i): node for i, node in sorted(nodes.items())},
        "connections": {
            str(source): dict(zip((str(c) for c in columns), cells, strict=True))
            for source, cells in sorted(rows.items())
        },
    }
    result.findings = _findings(nodes, columns, rows, str(domain))
    return result


def _incomplete(
    lines: list[str],
    nodes: dict[int, dict],
    columns: list[int] | None,
    rows: dict[int, list[str]],
    domain: str | None,
) -> str | None:
    """Why the report cannot be judged: not IMEX output, or cut before its end."""
    if not nodes and not any(line.startswith(LEGEND) for line in lines):
        return "not nvidia-imex-ctl -N output: no 'Node #n - address - status' line"
    if not nodes:
        return "truncated: the IMEX report lists no node"
    if columns is None:
        return "truncated: the IMEX report has no connectivity table"
    if domain is None:
        return "truncated: the IMEX report has no 'Domain State:' line at its end"
    if sorted(columns) != sorted(nodes) or sorted(rows) != sorted(nodes):
        return (
            f"the IMEX table has {len(rows)} rows and {len(columns)} columns "
            f"for {len(nodes)} nodes (cut?)"
        )
    short = [i for i, cells in rows.items() if len(cells) != len(columns)]
    if short:
        return f"IMEX table row {short[0]} has a cell per node missing (cut?)"
    unknown = {cell for cells in rows.values() for cell in cells} - set(CELLS)
    if unknown:
        return f"unknown IMEX connection state(s): {', '.join(sorted(unknown))}"
    return None


def _findings(
    nodes: dict[int, dict], columns: list[int], rows: dict[int, list[str]], domain: str
) -> list[Finding]:
    findings = []
    for index, node in sorted(nodes.items()):
        if node["status"] != "READY":
            part = _node(index, node)
            findings.append(_finding(part, f"{part}: {node['status']}", "imex_node_not_ready"))
    bad = {
        (source, target): cell
        for source, cells in rows.items()
        for target, cell in zip(columns, cells, strict=True)
        if source != target and cell != "C"
    }
    # A node whose every pair failed is the node at fault, not each of its peers.
    isolated = [
        n
        for n in sorted(nodes)
        if len(nodes) > 1 and all((n, o) in bad and (o, n) in bad for o in nodes if o != n)
    ]
    for index in isolated:
        part = _node(index, nodes[index])
        message = f"{part}: connected to none of its {len(nodes) - 1} peers"
        findings.append(_finding(part, message, "imex_node_unreachable"))
    for (source, target), cell in sorted(bad.items()):
        if source in isolated or target in isolated:
            continue
        part = f"{_node(source, nodes[source])} -> {_node(target, nodes[target])}"
        findings.append(_finding(part, f"{part}: {CELLS[cell]}", "imex_not_connected"))
    if domain != "UP":
        findings.append(_finding("IMEX domain", f"IMEX domain state {domain}", "imex_domain_down"))
    return findings


def _node(index: int, node: dict) -> str:
    return f"IMEX node #{index} ({node['address']})"


def _finding(part: str, message: str, code: str) -> Finding:
    return Finding(part=part, kind="node", message=message, severity=Severity.CRITICAL, code=code)
