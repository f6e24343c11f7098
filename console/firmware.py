"""The fleet's firmware: which versions run on which parts, which one each manifest wants, who is behind.

A row is one running version of one component kind and model, on nodes of one SKU that are on one
manifest (the one a node was last provisioned to, else the one its latest run brings it to: the
rule of provisioning.day2.behind). The manifest's firmware target for the kind says the version it
wants: per-model targets first, by the one model rule the firmware phases use, and only for the
kind's own parts (an HGX bundle's version is its HMC's, not its GPUs'). A row whose running
version is not the wanted one, compared as the kind compares versions, puts its nodes behind.
Kinds no manifest targets (GPUs, NVSwitches, CPUs, PSUs) are listed with what they run.

However large the fleet, `firmware_rows` costs at most three queries: one aggregate over the
components, one for the manifests the rows name, one for the serials of the nodes behind. Neither
of the two over the components evaluates a subquery per part: at 5,000 nodes (155,000 parts)
that cost PostgreSQL 14 s a page, with its JIT compiler brought in by the subqueries' cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from agent.protocol import model_fits
from fleet.choices import ComponentKind
from fleet.manifests import DEFAULT_PARTS
from fleet.models import Component, Manifest, Node
from provisioning.core.firmware_targets import targets
from provisioning.day2.behind import latest_runs
from provisioning.models import Run
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


# The columns a row is grouped by; the manifest's comes from one of the two sources below.
GROUP_COLUMNS = ("kind", "model", "firmware_version", "node__sku__name")


def _by_source(components: QuerySet[Component]) -> tuple[QuerySet, QuerySet]:
    """The components in two parts by where their node's manifest is read, with `on_manifest`.

    A node provisioned to a manifest, or never run, is on its own column's (`Node.manifest`, null
    for none); a node never provisioned but run is on its latest run's, joined through
    provisioning.day2.behind.latest_runs (an anti-join). The two parts' nodes are apart, so their
    counts add.
    """
    never_run = ~Exists(Run.objects.filter(node_id=OuterRef("node_id")))
    own = components.filter(Q(node__manifest__isnull=False) | never_run)
    by_run = components.filter(node__manifest__isnull=True, node__runs__in=latest_runs())
    return (
        own.annotate(on_manifest=F("node__manifest_id")),
        by_run.annotate(on_manifest=F("node__runs__manifest_id")),
    )


def _key(kind: str, model: str, version: str, sku: str, manifest_id: int | None) -> tuple:
    return (kind, model, version, sku, manifest_id)


def _groups(parts: tuple[QuerySet, QuerySet]) -> dict[tuple, dict[str, int]]:
    """Parts and nodes per row key, from both parts of the components, in one query."""
    own, by_run = (
        p.values(*GROUP_COLUMNS, "on_manifest")
        .annotate(parts=Count("pk"), nodes=Count("node_id", distinct=True))
        .order_by()
        for p in parts
    )
    groups: dict[tuple, dict[str, int]] = {}
    for g in own.union(by_run, all=True):
        key = _key(
            g["kind"], g["model"], g["firmware_version"], g["node__sku__name"], g["on_manifest"]
        )
        total = groups.setdefault(key, {"parts": 0, "nodes": 0})
        total["parts"] += g["parts"]
        total["nodes"] += g["nodes"]
    return groups


def firmware_rows(nodes: QuerySet[Node]) -> list[FirmwareRow]:
    """The firmware of these nodes' components as rows (see the module's docstring)."""
    parts = _by_source(Component.objects.filter(node__in=nodes.values("pk")))
    groups = _groups(parts)
    ids = {key[4] for key in groups if key[4] is not None}
    manifests = {m.pk: m for m in Manifest.objects.filter(pk__in=ids).only("version", "spec")}
    rows: dict[tuple, FirmwareRow] = {}
    for key, counts in groups.items():
        kind, model, version, sku, manifest_id = key
        manifest = manifests.get(manifest_id)
        rows[key] = FirmwareRow(
            kind=kind,
            model=model,
            version=version,
            sku=sku,
            manifest_version=manifest.version if manifest else "",
            wanted=wanted_version(kind, model, manifest.spec) if manifest else "",
            parts=counts["parts"],
            nodes=counts["nodes"],
        )
    _name_behind_nodes(parts, {k: r for k, r in rows.items() if r.is_behind})
    return sorted(rows.values(), key=_order)


def _name_behind_nodes(parts: tuple[QuerySet, QuerySet], behind: dict[tuple, FirmwareRow]) -> None:
    """Fill each behind row's serials in one query that reads the parts of those rows only: one
    OR-branch a row, and rows follow the versions the fleet runs, not its size (a whole key, so
    the fleet's parts already on target are never read back)."""
    if not behind:
        return
    match = Q()
    for kind, model, version, sku, manifest_id in behind:
        match |= Q(
            kind=kind,
            model=model,
            firmware_version=version,
            node__sku__name=sku,
            on_manifest=manifest_id,
        )
    # Not DISTINCT: a node's eight NICs come back eight times and the set below folds them, which
    # costs less than PostgreSQL sorting tens of thousands of rows by six text columns.
    own, by_run = (
        p.filter(match).values_list(*GROUP_COLUMNS, "on_manifest", "node__serial").order_by()
        for p in parts
    )
    serials: dict[tuple, set[str]] = {}
    for kind, model, version, sku, manifest_id, serial in own.union(by_run, all=True):
        serials.setdefault(_key(kind, model, version, sku, manifest_id), set()).add(serial)
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
