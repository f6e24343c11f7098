"""The fleet's firmware: which versions run on which parts, which one each manifest wants, who is behind.

A row is one running version of one component kind and model, on nodes of one SKU that are on one
manifest (the one a node was last provisioned to, else the one its latest run brings it to: the
rule of provisioning.day2.behind). The manifest's firmware target for the kind says the version it
wants: per-model targets first, by the one model rule the firmware phases use, and only for the
kind's own parts (an HGX bundle's version is its HMC's, not its GPUs'). A row whose running
version is not the wanted one, compared as the kind compares versions, puts its nodes behind.
Kinds no manifest targets (GPUs, NVSwitches, CPUs, PSUs) are listed with what they run.

However large the fleet, `firmware_rows` costs at most three queries: one aggregate over the
components, one for the manifests the rows name, one for the serials of the nodes behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery

from agent.protocol import model_fits
from fleet.choices import ComponentKind
from fleet.manifests import DEFAULT_PARTS
from fleet.models import Component, Manifest, Node
from provisioning.core.firmware_targets import targets
from provisioning.day2.behind import with_on_manifest
from provisioning.redfish.versions import same_version

KIND_ORDER = {kind: index for index, kind in enumerate(ComponentKind.values)}
KIND_LABELS = dict(ComponentKind.choices)
# The columns of a row, in the order the CSV export writes them.
CSV_HEADER = [
    "kind",
    "model",
    "running_version",
    "sku",
    "manifest_version",
    "wanted_version",
    "parts",
    "nodes",
    "nodes_behind",
    "behind_serials",
]


@dataclass
class FirmwareRow:
    """One running version of one kind and model, on nodes of one SKU on one manifest."""

    kind: str
    model: str
    version: str
    sku: str
    manifest_version: str  # "" when the nodes are on no manifest yet
    wanted: str  # "" when their manifest has no target for this part
    parts: int
    nodes: int
    behind_serials: list[str] = field(default_factory=list)

    @property
    def kind_label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)

    @property
    def is_behind(self) -> bool:
        """Whether the running version is not the one the manifest wants."""
        return bool(self.wanted) and not same_version(self.kind, self.version, self.wanted)

    @property
    def nodes_behind(self) -> int:
        return self.nodes if self.is_behind else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "kind_label": self.kind_label,
            "model": self.model,
            "version": self.version,
            "sku": self.sku,
            "manifest_version": self.manifest_version,
            "wanted": self.wanted,
            "parts": self.parts,
            "nodes": self.nodes,
            "nodes_behind": self.nodes_behind,
            "behind_serials": self.behind_serials,
        }


def wanted_version(kind: str, model: str, spec: dict[str, Any] | None) -> str:
    """The version a manifest's spec wants on a part of this kind and model ("" for none)."""
    block = ((spec or {}).get("firmware") or {}).get(kind)
    own = set(DEFAULT_PARTS.get(kind, (kind,)))
    for target in targets(kind, block):
        if own.intersection(target.parts) and model_fits(target.model, model):
            return target.version
    return ""


def _with_manifest(components: QuerySet[Component]) -> QuerySet[Component]:
    """Annotate `on_manifest`: the id of the manifest each component's node is on."""
    on = with_on_manifest(Node.objects.filter(pk=OuterRef("node_id")))
    # django-stubs cannot see annotated names (on_manifest_id, on_manifest) as fields.
    return components.annotate(on_manifest=Subquery(on.values("on_manifest_id")[:1]))  # type: ignore[misc]


def _key(kind: str, model: str, version: str, sku: str, manifest_id: int | None) -> tuple:
    return (kind, model, version, sku, manifest_id)


def firmware_rows(nodes: QuerySet[Node]) -> list[FirmwareRow]:
    """The firmware of these nodes' components as rows (see the module's docstring)."""
    components = _with_manifest(Component.objects.filter(node__in=nodes.values("pk")))
    groups = list(
        components.values("kind", "model", "firmware_version", "node__sku__name", "on_manifest")  # type: ignore[misc]
        .annotate(parts=Count("pk"), nodes=Count("node_id", distinct=True))
        .order_by()
    )
    ids = {g["on_manifest"] for g in groups if g["on_manifest"] is not None}
    manifests = {m.pk: m for m in Manifest.objects.filter(pk__in=ids).only("version", "spec")}
    rows: dict[tuple, FirmwareRow] = {}
    for g in groups:
        manifest = manifests.get(g["on_manifest"])
        key = _key(
            g["kind"], g["model"], g["firmware_version"], g["node__sku__name"], g["on_manifest"]
        )
        rows[key] = FirmwareRow(
            kind=g["kind"],
            model=g["model"],
            version=g["firmware_version"],
            sku=g["node__sku__name"],
            manifest_version=manifest.version if manifest else "",
            wanted=wanted_version(g["kind"], g["model"], manifest.spec) if manifest else "",
            parts=g["parts"],
            nodes=g["nodes"],
        )
    _name_behind_nodes(components, {k: r for k, r in rows.items() if r.is_behind})
    return sorted(rows.values(), key=_order)


def _name_behind_nodes(components: QuerySet[Component], behind: dict[tuple, FirmwareRow]) -> None:
    """Fill each behind row's serials in one query: the kinds and versions narrow it in SQL,
    the full key in Python (a row is a combination SQL would need one OR-branch each for)."""
    if not behind:
        return
    found = (
        components.filter(
            kind__in={k[0] for k in behind}, firmware_version__in={k[2] for k in behind}
        )
        .values_list(  # type: ignore[misc]
            "kind", "model", "firmware_version", "node__sku__name", "on_manifest", "node__serial"
        )
        .order_by()
        .distinct()
    )
    serials: dict[tuple, set[str]] = {}
    for kind, model, version, sku, manifest_id, serial in found:
        key = _key(kind, model, version, sku, manifest_id)
        if key in behind:
            serials.setdefault(key, set()).add(serial)
    for key, row in behind.items():
        row.behind_serials = sorted(serials.get(key, ()))


def _order(row: FirmwareRow) -> tuple:
    return (
        KIND_ORDER.get(row.kind, len(KIND_ORDER)),
        row.model,
        row.sku,
        row.manifest_version,
        row.version,
    )


@dataclass
class ModelSummary:
    """The rows of one kind and model, with their totals: what a page shows as one block."""

    kind_label: str
    model: str
    rows: list[FirmwareRow]

    @property
    def nodes_behind(self) -> int:
        return sum(r.nodes_behind for r in self.rows)

    @property
    def versions(self) -> int:
        return len({r.version for r in self.rows})


def by_model(rows: Iterable[FirmwareRow]) -> list[ModelSummary]:
    """Rows grouped by kind and model, keeping their order."""
    groups: dict[tuple[str, str], ModelSummary] = {}
    for row in rows:
        key = (row.kind, row.model)
        groups.setdefault(key, ModelSummary(row.kind_label, row.model, [])).rows.append(row)
    return list(groups.values())


def csv_rows(rows: Iterable[FirmwareRow]) -> Iterator[list[object]]:
    """The header, then one line per row (cells are made safe by exports.stream_csv)."""
    yield list(CSV_HEADER)
    for r in rows:
        yield [
            r.kind,
            r.model,
            r.version,
            r.sku,
            r.manifest_version,
            r.wanted,
            r.parts,
            r.nodes,
            r.nodes_behind,
            " ".join(r.behind_serials),
        ]
