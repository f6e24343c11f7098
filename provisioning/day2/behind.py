"""Which nodes are behind their SKU's published manifest.

A node is on the manifest it was last provisioned to (`Node.manifest`, written when a run
succeeds); a node never provisioned yet is on the manifest its latest run is bringing it to (a
retry resumes that run, pinned version and all). It is behind when that is not its SKU's published
manifest. A node with neither (enrolled, never run) is on nothing: its first run takes the
published version, so it is not behind. Decommissioned nodes are never behind.

The facts are annotations on a node queryset (subqueries, no extra query), so the rack view marks
every slot and the node panel says "Manifest 1.0.0; 1.0.1 is published" in the queries they
already make.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import BigIntegerField, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from fleet.choices import DocumentStatus, NodeState
from fleet.models import Manifest, Node, Rack

from ..models import Run


def with_on_manifest(nodes: QuerySet[Node]) -> QuerySet[Node]:
    """Annotate `on_manifest_id`: the manifest each node is on (see the module's docstring)."""
    latest = Run.objects.filter(node=OuterRef("pk")).order_by("-created_at", "-pk")
    return nodes.annotate(
        on_manifest_id=Coalesce(
            F("manifest_id"),
            Subquery(latest.values("manifest_id")[:1]),
            output_field=BigIntegerField(),
        )
    )


def latest_runs() -> QuerySet[Run]:
    """Each node's latest run, the one `with_on_manifest` reads (no run of the node is newer:
    created later, or at the same time with a larger id), as a set.

    An anti-join rather than a subquery per node, for aggregates over every node's parts: joined
    to 150,000 components, a per-row subquery cost PostgreSQL seconds (and its JIT compiler the
    rest), this costs one pass over the runs."""
    newer = Run.objects.filter(node_id=OuterRef("node_id")).filter(
        Q(created_at__gt=OuterRef("created_at"))
        | Q(created_at=OuterRef("created_at"), pk__gt=OuterRef("pk"))
    )
    return Run.objects.filter(~Exists(newer))


def with_manifests(nodes: QuerySet[Node]) -> QuerySet[Node]:
    """Annotate the manifest each node is on and its SKU's published one, ids and versions."""
    published = Manifest.objects.filter(sku=OuterRef("sku"), status=DocumentStatus.PUBLISHED)
    on = Manifest.objects.filter(pk=OuterRef("on_manifest_id"))
    return with_on_manifest(nodes).annotate(
        published_manifest_id=Subquery(published.values("pk")[:1]),
        published_version=Subquery(published.values("version")[:1]),
        on_version=Subquery(on.values("version")[:1]),
    )


@dataclass(frozen=True)
class Behind:
    """A node's manifest and the newer one its SKU has published."""

    on_version: str
    published_version: str

    @property
    def words(self) -> str:
        return f"Manifest {self.on_version}; {self.published_version} is published"


def behind_of(node: Node) -> Behind | None:
    """What the node is behind, from `with_manifests` annotations (read here if missing)."""
    if not hasattr(node, "published_manifest_id"):
        node = with_manifests(Node.objects.filter(pk=node.pk)).get()
    facts = vars(node)  # the annotations: instance attributes the type checker cannot see
    on, published = facts["on_manifest_id"], facts["published_manifest_id"]
    if node.state == NodeState.DECOMMISSIONED or on is None or published is None:
        return None
    if on == published:
        return None
    return Behind(facts["on_version"], facts["published_version"])


def manifest_id_of(node: Node) -> int | None:
    """The id of the manifest the node is on now (read afresh), or None."""
    fresh = with_on_manifest(Node.objects.filter(pk=node.pk)).first()
    return vars(fresh).get("on_manifest_id") if fresh is not None else None


def is_behind(node: Node) -> bool:
    """True when the node (annotated by `with_manifests`) is behind its published manifest."""
    return behind_of(node) is not None


def behind_nodes(manifest: Manifest) -> QuerySet[Node]:
    """The nodes of the manifest's SKU that are on another version: those it puts (or has put)
    behind once published. For a draft that is every provisioned node of the SKU."""
    nodes = Node.objects.filter(sku_id=manifest.sku_id).exclude(state=NodeState.DECOMMISSIONED)
    return (
        with_on_manifest(nodes)
        .exclude(Q(on_manifest_id__isnull=True) | Q(on_manifest_id=manifest.pk))
        .select_related("rack__site")
        .order_by("rack__site__name", "rack__name", "position", "serial")
    )


@dataclass
class RackGroup:
    """Nodes of one rack (or of none), for a list "by rack"."""

    rack: Rack | None
    nodes: list[Node]

    @property
    def name(self) -> str:
        return str(self.rack) if self.rack is not None else "not racked"


def by_rack(nodes: Iterable[Node]) -> list[RackGroup]:
    """Group nodes by rack, keeping their order (racks in order of first appearance)."""
    groups: dict[int | None, RackGroup] = {}
    for node in nodes:
        group = groups.setdefault(node.rack_id, RackGroup(node.rack, []))
        group.nodes.append(node)
    return list(groups.values())
