"""The CSV export of nodes with their components, streamed row by row.

Memory stays flat however large the fleet: nodes are read with iterator(chunk_size) (components
prefetched one chunk at a time) and each node's rows are written and handed to the response
before the next node is read.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from django.db.models import QuerySet

from fleet.models import Component, Node

NODE_COLUMNS = [
    "serial",
    "hostname",
    "sku",
    "site",
    "rack",
    "position",
    "state",
    "manifest_version",
    "last_verdict",
    "bmc_address",
    "mac_addresses",
    "tenant",
]
COMPONENT_COLUMNS = [
    "component_kind",
    "component_slot",
    "component_model",
    "component_serial",
    "component_part_number",
    "component_firmware_version",
]
HEADER = NODE_COLUMNS + COMPONENT_COLUMNS
# Django holds the previous chunk while it prefetches the next: peak memory is two chunks.
CHUNK_SIZE = 200


class _Echo:
    """A file whose write() returns what it was given, so csv.writer yields strings."""

    def write(self, value: str) -> str:
        return value


# A spreadsheet runs a cell starting with one of these as a formula (CSV injection); OWASP's
# guidance lists all six, "-" included: `-2+3+cmd|' /C calc'!A0` is live in Excel.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: object) -> str:
    """The cell's text, a formula start defused with a leading single quote (OWASP)."""
    text = "" if value is None else str(value)
    if text.startswith(FORMULA_STARTS):
        return "'" + text
    return text


def _node_cells(node: Node) -> list[object]:
    rack = node.rack
    return [
        node.serial,
        node.hostname,
        node.sku.name,
        rack.site.name if rack else "",
        rack.name if rack else "",
        node.position,
        node.state,
        node.manifest.version if node.manifest_id else "",
        getattr(node, "last_verdict", None),
        node.bmc_address,
        " ".join(str(mac) for mac in node.mac_addresses or []),
        node.tenant,
    ]


def _component_cells(component: Component) -> list[object]:
    return [
        component.kind,
        component.slot,
        component.model,
        component.serial,
        component.part_number,
        component.firmware_version,
    ]


def node_rows(nodes: QuerySet[Node], chunk_size: int = CHUNK_SIZE) -> Iterator[list[object]]:
    """The header, then one row per component (node columns repeated); a bare node gets one."""
    yield list(HEADER)
    empty: list[object] = [""] * len(COMPONENT_COLUMNS)
    for node in nodes.iterator(chunk_size=chunk_size):
        cells = _node_cells(node)
        components = list(node.components.all())
        if not components:
            yield cells + empty
        for component in components:
            yield cells + _component_cells(component)


def stream_csv(rows: Iterable[list[object]], rows_per_chunk: int = 200) -> Iterator[str]:
    """CSV text in chunks of a few hundred rows: few writes, bounded memory.

    Every cell of every export passes spreadsheet_cell here, so no export can forget it.
    """
    writer = csv.writer(_Echo())
    buffer: list[str] = []
    for row in rows:
        buffer.append(writer.writerow([spreadsheet_cell(value) for value in row]))
        if len(buffer) >= rows_per_chunk:
            yield "".join(buffer)
            buffer = []
    if buffer:
        yield "".join(buffer)
