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


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    # A spreadsheet would run a cell starting with these as a formula (CSV injection).
    if text[:1] in ("=", "+", "@", "\t", "\r"):
        return "'" + text
    return text


def _node_cells(node: Node) -> list[str]:
    rack = node.rack
    return [
        _cell(v)
        for v in (
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
        )
    ]


def _component_cells(component: Component) -> list[str]:
    return [
        _cell(v)
        for v in (
            component.kind,
            component.slot,
            component.model,
            component.serial,
            component.part_number,
            component.firmware_version,
        )
    ]


def node_rows(nodes: QuerySet[Node], chunk_size: int = CHUNK_SIZE) -> Iterator[list[str]]:
    """The header, then one row per component (node columns repeated); a bare node gets one."""
    yield HEADER
    empty = [""] * len(COMPONENT_COLUMNS)
    for node in nodes.iterator(chunk_size=chunk_size):
        cells = _node_cells(node)
        components = list(node.components.all())
        if not components:
            yield cells + empty
        for component in components:
            yield cells + _component_cells(component)


def stream_csv(rows: Iterable[list[str]], rows_per_chunk: int = 200) -> Iterator[str]:
    """CSV text in chunks of a few hundred rows: few writes, bounded memory."""
    writer = csv.writer(_Echo())
    buffer: list[str] = []
    for row in rows:
        buffer.append(writer.writerow(row))
        if len(buffer) >= rows_per_chunk:
            yield "".join(buffer)
            buffer = []
    if buffer:
        yield "".join(buffer)
