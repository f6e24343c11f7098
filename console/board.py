"""The live board: what the site overview and the rack view show, in a fixed number of queries.

The pages and the snapshot endpoint both read these functions and render the same fragments, so
a first paint and a live update cannot disagree.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Count, Q

from acceptance.decisions import passed_node_ids
from fleet.choices import NODE_STATE_COLORS, NODE_STATE_ICONS, NodeState
from fleet.lifecycle import ACTIVE_STATES, NEEDS_ATTENTION_STATES
from fleet.models import Event, Node, Rack, RackSystem, Site
from provisioning.choices import ACTIVE_RUN_STATUSES, PhaseStatus
from provisioning.core import progress
from provisioning.core.phases import PHASES, label_of
from provisioning.day2.behind import Behind, behind_of, with_manifests
from provisioning.models import PhaseRecord, Run

# Event ids are allocated at INSERT, not at COMMIT: an event with a smaller id can become
# visible just after a larger one. A "since" query looks this far back, so such a late event is
# re-read (a few slots rendered twice) rather than missed.
SEQ_OVERLAP = 200


@dataclass(frozen=True)
class StateCount:
    state: str
    label: str
    color: str
    icon: str
    count: int


def state_counts(counter: Counter) -> list[StateCount]:
    """One entry per lifecycle state with nodes in it, in lifecycle order."""
    return [
        StateCount(s.value, s.label, NODE_STATE_COLORS[s], NODE_STATE_ICONS[s], counter[s.value])
        for s in NodeState
        if counter.get(s.value)
    ]


@dataclass(frozen=True)
class LegendEntry:
    state: str
    label: str
    color: str
    icon: str


def state_legend() -> list[LegendEntry]:
    """Every lifecycle state with its colour and icon, in lifecycle order: the pages' legend."""
    return [
        LegendEntry(s.value, s.label, NODE_STATE_COLORS[s], NODE_STATE_ICONS[s]) for s in NodeState
    ]


def latest_seq() -> int:
    """The id of the newest event: the sequence number a page is current up to."""
    return Event.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


# --- the rack view -----------------------------------------------------------------------------


@dataclass
class Slot:
    """One node as the rack elevation shows it."""

    node: Node
    phase_label: str = ""
    phases_done: int = 0
    progress: int | None = None  # percent of the run's phases and gates, while it is active
    phase_progress: str = ""  # a long phase's own progress in words ("12.5 h of 72 h")
    ready: bool | None = None  # awaiting approval: did every gate pass?
    behind: Behind | None = None  # on an older manifest than its SKU's published one
    height_u: int = 1  # a rack-scale member's declared height (console.rack_system sets it)
    member: str = ""  # a rack-scale member's kind and number, "Compute tray 3"

    @property
    def color(self) -> str:
        return NODE_STATE_COLORS[NodeState(self.node.state)]

    @property
    def icon(self) -> str:
        return NODE_STATE_ICONS[NodeState(self.node.state)]

    @property
    def attention(self) -> bool:
        return self.node.state in NEEDS_ATTENTION_STATES or bool(self.node.attention)


def phase_label(name: str) -> str:
    """The readable name of a phase (or gate) the run is in."""
    return label_of(name)


def rack_slots(rack: Rack, node_ids: set[int] | None = None) -> list[Slot]:
    """The rack's nodes (or only `node_ids` of them) with run progress: 2-4 queries."""
    nodes = Node.objects.filter(rack=rack).select_related("sku").order_by("position", "serial")
    if node_ids is not None:
        nodes = nodes.filter(pk__in=node_ids)
    # Which manifest each node is on and which is published: subqueries of the same query.
    slots = {n.pk: Slot(n, behind=behind_of(n)) for n in with_manifests(nodes)}
    active = [pk for pk, s in slots.items() if s.node.state in ACTIVE_STATES]
    if active:
        done = Count("phases", filter=Q(phases__status__in=[PhaseStatus.DONE, PhaseStatus.SKIPPED]))
        runs = list(
            Run.objects.filter(node_id__in=active, status__in=ACTIVE_RUN_STATUSES)
            .annotate(done=done, total=Count("phases"))
            .only("pk", "node_id", "current_phase")
        )
        # A long phase (a soak, a BMC update task) moves the bar by its own progress.
        current = {
            run_id: progress.of_phase(resume)
            for run_id, resume in PhaseRecord.objects.filter(
                run_id__in=[r.pk for r in runs],
                status__in=[PhaseStatus.RUNNING, PhaseStatus.WAITING],
            ).values_list("run_id", "resume")
        }
        for run in runs:
            slot = slots[run.node_id]
            # Gates count too, so a node in its soak is not shown as all but done.
            total = max(run.total, len(PHASES))
            long = current.get(run.pk)
            slot.phases_done = min(run.done, total)
            slot.progress = round(100 * (slot.phases_done + (long.fraction if long else 0)) / total)
            slot.phase_label = phase_label(run.current_phase) if run.current_phase else ""
            slot.phase_progress = long.words if long else ""
    waiting = [pk for pk, s in slots.items() if s.node.state == NodeState.AWAITING_APPROVAL]
    if waiting:
        passed = passed_node_ids(Node.objects.filter(pk__in=waiting))
        for pk in waiting:
            slots[pk].ready = pk in passed
    return list(slots.values())


@dataclass
class Elevation:
    """The rack from its top U down: each row a slot (spanning its height in U) or one empty U."""

    rows: list[tuple[int, Slot | None, int]]
    unplaced: list[Slot]


def elevation(rack: Rack, slots: list[Slot]) -> Elevation:
    """Rows (lowest U, slot or None, height in U) from the top down: a 2U member is one row
    spanning its two units, and the units it covers are not drawn again as empty."""
    # A member declared taller than the rack has room above it is drawn up to the top U.
    by_top = {
        min(s.node.position + s.height_u - 1, rack.height_u): s for s in slots if s.node.position
    }
    rows: list[tuple[int, Slot | None, int]] = []
    u = rack.height_u
    while u >= 1:
        slot = by_top.get(u)
        if slot is not None:
            lowest = slot.node.position or u  # placed: by_top holds only slots with a position
            span = max(u - lowest + 1, 1)
            rows.append((lowest, slot, span))
            u -= span
        else:
            rows.append((u, None, 1))
            u -= 1
    return Elevation(rows, [s for s in slots if not s.node.position])


@dataclass
class RackSummary:
    rack: Rack
    total: int
    counts: list[StateCount]
    in_service_pct: int
    ready: int = 0  # awaiting approval with every gate passed
    behind: int = 0  # on an older manifest than the published one


def rack_summary(rack: Rack, slots: list[Slot]) -> RackSummary:
    counter = Counter(s.node.state for s in slots)
    total = len(slots)
    pct = round(100 * counter[NodeState.IN_SERVICE] / total) if total else 0
    ready = sum(1 for s in slots if s.ready)
    behind = sum(1 for s in slots if s.behind)
    return RackSummary(rack, total, state_counts(counter), pct, ready, behind)


# --- the site overview -------------------------------------------------------------------------


@dataclass
class RackRow:
    rack: Rack
    total: int = 0
    counter: Counter = field(default_factory=Counter)

    @property
    def counts(self) -> list[StateCount]:
        return state_counts(self.counter)

    @property
    def in_service_pct(self) -> int:
        return round(100 * self.counter[NodeState.IN_SERVICE] / self.total) if self.total else 0

    @property
    def active(self) -> int:
        return sum(self.counter[s] for s in ACTIVE_STATES)

    @property
    def system(self) -> RackSystem | None:
        """The rack-scale system this rack is, if it is one: brought up, judged and approved as
        one, so its own state says more than its members' counts (no query: selected along)."""
        return getattr(self.rack, "system", None)


@dataclass
class SiteBlock:
    site: Site
    rows: list[RackRow]


@dataclass
class Overview:
    sites: list[SiteBlock]
    total: RackRow  # the fleet (or the site) as one row


def overview(site: Site | None = None, state: str = "", sku: str = "") -> Overview:
    """Every rack (of one site, or all) with counts per state: 2 queries, whatever the fleet."""
    racks = Rack.objects.select_related("site", "system").order_by("site__name", "name")
    nodes = Node.objects.filter(rack__isnull=False)
    if site is not None:
        racks = racks.filter(site=site)
        nodes = nodes.filter(rack__site=site)
    if state:
        nodes = nodes.filter(state=state)
    if sku:
        nodes = nodes.filter(sku__name=sku)
    rows = {r.pk: RackRow(r) for r in racks}
    total = RackRow(Rack(name="total"))
    for rack_id, node_state, n in nodes.values_list("rack_id", "state").annotate(n=Count("pk")):
        row = rows.get(rack_id)
        if row is not None:
            row.counter[node_state] += n
            row.total += n
            total.counter[node_state] += n
            total.total += n
    blocks: dict[int, SiteBlock] = {}
    for row in rows.values():
        if (state or sku) and not row.total:
            continue  # a filter hides racks with nothing matching
        block = blocks.setdefault(row.rack.site_id, SiteBlock(row.rack.site, []))
        block.rows.append(row)
    return Overview(list(blocks.values()), total)
