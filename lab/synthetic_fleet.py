"""A synthetic fleet of any size, written with bulk_create: the pages' scale tests and benchmarks.

Not a bring-up: rows are written straight into the tables (as the board's scenes do), so 5,000
nodes take seconds. The fleet has what the pages read: two sites, full racks of 42U, two SKUs,
a retired and a published manifest (a third of the older SKU's nodes still on the retired one),
nodes in every lifecycle state with their runs (active ones with phase records, finished ones,
failed ones), gate results for nodes awaiting approval, one event each, and an inventory of
BMC, BIOS, HGX, GPU, NIC, DPU, NVMe and CPU parts running several versions per model.

Grow a fleet by calling `build_fleet` again with `first` set to the number of nodes it already
has: the sites, SKUs and manifests are found again, racks fill on from where they stopped.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from acceptance.choices import Verdict
from acceptance.gates import GateName
from acceptance.models import GateResult
from fleet.choices import ComponentKind as K
from fleet.choices import DocumentStatus, EventKind
from fleet.choices import NodeState as S
from fleet.models import Component, Event, Manifest, Node, Rack, Site, Sku
from provisioning.choices import PhaseStatus, RunStatus
from provisioning.core.phases import PHASES
from provisioning.models import PhaseRecord, Run

SAMPLE_MANIFEST = (
    Path(__file__).resolve().parents[1] / "acceptance/samples/hgx-h100-8gpu.manifest.yaml"
)
RACK_HEIGHT = 42
SERIAL_PREFIX = "SC"
SITES = ("scale-hall-1", "scale-hall-2")
# One node in each 20 per state, interleaved so that any eight nodes in a row hold one in an
# active run and most hold one awaiting approval: a rack's first few nodes show every kind of slot.
STATE_CYCLE = (
    [S.IN_SERVICE, S.PROVISIONING, S.IN_SERVICE, S.AWAITING_APPROVAL, S.IN_SERVICE, S.ENROLLED]
    + [S.IN_SERVICE, S.VALIDATING, S.IN_SERVICE, S.FAILED, S.IN_SERVICE, S.PROVISIONING]
    + [S.IN_SERVICE, S.AWAITING_APPROVAL, S.IN_SERVICE, S.QUARANTINED, S.IN_SERVICE]
    + [S.PROVISIONING, S.BREAK_FIX, S.DECOMMISSIONED]
)
# States whose node was provisioned to a manifest (Node.manifest is set).
PROVISIONED = {S.IN_SERVICE, S.AWAITING_APPROVAL, S.VALIDATING, S.QUARANTINED}
PROVISIONED |= {S.BREAK_FIX, S.DECOMMISSIONED}
# States whose latest run is still going (the one-active-run constraint holds: one run a node).
ACTIVE = {S.PROVISIONING, S.VALIDATING}


@dataclass(frozen=True)
class ManifestPlan:
    """A manifest the fleet has: its SKU, version, status and the firmware each kind targets."""

    sku: str
    version: str
    status: str
    firmware: dict[str, str]  # kind -> version, for every part of that kind
    nvme_models: dict[str, str]  # an NVMe model -> the version this manifest wants on it


MANIFESTS = (
    ManifestPlan(
        "hgx-h100-8gpu",
        "1.0.0",
        DocumentStatus.RETIRED,
        {K.BMC: "7.10.30.00", K.BIOS: "2.3.5", K.HGX: "1.6.0", K.NIC: "28.43.1014"}
        | {K.DPU: "24.43.1014", K.NVME: "GDC7402Q"},
        {},
    ),
    ManifestPlan(
        "hgx-h100-8gpu",
        "1.1.0",
        DocumentStatus.PUBLISHED,
        {K.BMC: "7.10.50.00", K.BIOS: "2.4.1", K.HGX: "1.7.0", K.NIC: "28.43.1014"}
        | {K.DPU: "24.44.1036", K.NVME: "GDC7402Q"},
        {"MZQL27T6HBLA": "GDC5902Q"},
    ),
    ManifestPlan(
        "hgx-b200-8gpu",
        "2.0.0",
        DocumentStatus.PUBLISHED,
        {K.BMC: "1.30.2", K.BIOS: "0.9.7", K.HGX: "1.2.1", K.NIC: "28.44.1036"}
        | {K.DPU: "24.44.1036", K.NVME: "GDC7402Q"},
        {},
    ),
)

# The parts of a node of each SKU: (kind, slot prefix, how many, models) and the versions they
# run, picked per part so the fleet runs several versions of every model, most on target.
PARTS: dict[str, list[tuple[str, str, int, tuple[str, ...]]]] = {
    "hgx-h100-8gpu": [
        (K.BMC, "BMC", 1, ("iDRAC9",)),
        (K.BIOS, "BIOS", 1, ("BIOS",)),
        (K.HGX, "HMC", 1, ("HGX H100 8-GPU",)),
        (K.GPU, "GPU", 8, ("H100-SXM5-80GB",)),
        (K.NIC, "NIC", 8, ("ConnectX-7",)),
        (K.DPU, "DPU", 2, ("BlueField-3",)),
        (K.NVME, "NVMe", 8, ("MZQL27T6HBLA-00A07", "PM1743")),
        (K.CPU, "CPU", 2, ("Xeon Platinum 8480+",)),
    ],
    "hgx-b200-8gpu": [
        (K.BMC, "BMC", 1, ("OpenBMC",)),
        (K.BIOS, "BIOS", 1, ("BIOS",)),
        (K.HGX, "HMC", 1, ("HGX B200 8-GPU",)),
        (K.GPU, "GPU", 8, ("B200-SXM6-180GB",)),
        (K.NIC, "NIC", 8, ("ConnectX-7",)),
        (K.DPU, "DPU", 2, ("BlueField-3",)),
        (K.NVME, "NVMe", 8, ("PM1743",)),
        (K.CPU, "CPU", 2, ("EPYC 9654",)),
    ],
}
VERSIONS: dict[str, tuple[str, ...]] = {
    K.BMC: ("7.10.50.00",) * 4 + ("7.10.30.00",) * 3 + ("7.10.20.00", "1.30.2", "1.29.0"),
    K.BIOS: ("2.4.1",) * 4 + ("2.3.5",) * 3 + ("2.1.4", "0.9.7", "0.9.5"),
    K.HGX: ("1.7.0",) * 4 + ("1.6.0",) * 3 + ("1.2.1", "1.1.0"),
    K.GPU: ("96.00.99.00.01",) * 3 + ("96.00.74.00.0B", "97.00.0B.00.03"),
    K.NIC: ("28.43.1014",) * 6 + ("28.39.1002", "28.44.1036", "28.44.1036"),
    K.DPU: ("24.44.1036",) * 3 + ("24.43.1014", "24.40.1000"),
    K.NVME: ("GDC7402Q",) * 3 + ("GDC5902Q", "GDC5302Q"),
    K.CPU: ("0x2b000590",),
}


def part_version(kind: str, node_index: int, slot: int) -> str:
    """The version a part runs: spread over the kind's versions (a node's odd-numbered parts on
    another than its even ones), the same for the same part in every build."""
    choices = VERSIONS[kind]
    return choices[(node_index * 7 + 3 * (slot % 2)) % len(choices)]


@dataclass
class Fleet:
    """What `build_fleet` made or found: enough for a test or a benchmark to pick its pages."""

    sites: list[Site]
    racks: list[Rack]
    manifests: dict[tuple[str, str], Manifest]
    nodes: int


def manifest_yaml(plan: ManifestPlan) -> str:
    """The sample manifest, made this plan's SKU, version and firmware targets."""
    text = SAMPLE_MANIFEST.read_text()
    text = re.sub(r"(?m)^sku: .*$", f"sku: {plan.sku}", text)
    text = re.sub(r"(?m)^version: .*$", f'version: "{plan.version}"', text)
    for kind, version in plan.firmware.items():
        # The artifact's name follows the version; its sha256 stays the sample's (never flashed).
        block = re.compile(rf"(?m)^  {kind}:\n    version: .*\n    url: .*$")
        url = f"http://127.0.0.1:8099/artifacts/{kind}-{version}.bin"
        text = block.sub(f'  {kind}:\n    version: "{version}"\n    url: {url}', text)
    if plan.nvme_models:
        models = "".join(
            f'      {model}:\n        version: "{version}"\n'
            f"        url: http://127.0.0.1:8099/artifacts/nvme-{version}.bin\n"
            f"        sha256: {'a' * 64}\n"
            for model, version in plan.nvme_models.items()
        )
        text = re.sub(r"(?m)^(  nvme:\n(?:    .*\n)+)", rf"\g<1>    models:\n{models}", text)
    return text


def _skus_and_manifests() -> dict[tuple[str, str], Manifest]:
    manifests = {}
    for plan in MANIFESTS:
        sku, _ = Sku.objects.get_or_create(
            name=plan.sku,
            defaults=dict(gpu_count=8, nic_count=8, nic_line_rate_gbps=400, dpu_count=2)
            | dict(drive_count=8, nvlink_bandwidth_gbps=450),
        )
        found = Manifest.objects.filter(sku=sku, version=plan.version).first()
        if found is None:
            found = Manifest(yaml_text=manifest_yaml(plan))
            found.full_clean()
            found.save()
            # Written as they stand, not through publish(): a retired version was published once.
            Manifest.objects.filter(pk=found.pk).update(status=plan.status)
            found.refresh_from_db()
        manifests[(plan.sku, plan.version)] = found
    return manifests


def _racks(count: int) -> list[Rack]:
    sites = [Site.objects.get_or_create(name=name)[0] for name in SITES]
    racks = []
    for r in range(count):
        site = sites[r % len(sites)]
        rack, _ = Rack.objects.get_or_create(
            site=site, name=f"S{r:03d}", defaults={"height_u": RACK_HEIGHT}
        )
        racks.append(rack)
    return racks


def sku_of(index: int) -> str:
    """Every fifth node is of the newer SKU."""
    return "hgx-b200-8gpu" if index % 5 == 4 else "hgx-h100-8gpu"


def manifest_of(index: int) -> tuple[str, str]:
    """The manifest a provisioned node is on: a third of the older SKU's lag on the retired one."""
    if sku_of(index) == "hgx-b200-8gpu":
        return ("hgx-b200-8gpu", "2.0.0")
    return ("hgx-h100-8gpu", "1.0.0" if (index // 20) % 3 == 0 else "1.1.0")


def published_of(index: int) -> tuple[str, str]:
    """The published manifest of the node's SKU: what a first run brings a node to."""
    sku = sku_of(index)
    return next(
        (p.sku, p.version)
        for p in MANIFESTS
        if p.sku == sku and p.status == DocumentStatus.PUBLISHED
    )


def build_fleet(count: int, *, first: int = 0, parts_per_kind: int | None = None) -> Fleet:
    """Add `count` nodes (indices first..first+count-1) with their runs, gates and inventory;
    `parts_per_kind` caps a node's GPUs, NICs, drives... (a lighter inventory for tests)."""
    with transaction.atomic():
        manifests = _skus_and_manifests()
        racks = _racks((first + count + RACK_HEIGHT - 1) // RACK_HEIGHT)
        skus = {s.name: s for s in Sku.objects.filter(name__in={p.sku for p in MANIFESTS})}
        indices = range(first, first + count)
        nodes = Node.objects.bulk_create(
            [_node(i, racks, skus, manifests) for i in indices], batch_size=500
        )
        _runs_and_gates(nodes, indices, manifests)
        _inventory(nodes, indices, parts_per_kind)
        Event.objects.bulk_create(
            (
                Event(node=n, rack_id=n.rack_id, kind=EventKind.STATE_CHANGED, actor_label="scale")
                for n in nodes
            ),
            batch_size=1000,
        )
    return fleet_of(first + count)


def fleet_of(count: int) -> Fleet:
    """The synthetic fleet of `count` nodes the database holds, as `build_fleet` returns it."""
    racks = Rack.objects.filter(site__name__in=SITES).select_related("site")
    by_name = {r.name: r for r in racks}
    return Fleet(
        sites=list(Site.objects.filter(name__in=SITES).order_by("name")),
        racks=[by_name[f"S{r:03d}"] for r in range((count + RACK_HEIGHT - 1) // RACK_HEIGHT)],
        manifests={(m.sku.name, m.version): m for m in Manifest.objects.select_related("sku")},
        nodes=count,
    )


def existing_fleet() -> int | None:
    """How many synthetic nodes the database holds (0: none), or None if it holds others too."""
    total = Node.objects.count()
    ours = Node.objects.filter(serial__startswith=SERIAL_PREFIX).count()
    return ours if ours == total else None


def _node(index: int, racks: list[Rack], skus: dict[str, Sku], manifests: dict) -> Node:
    state = STATE_CYCLE[index % len(STATE_CYCLE)]
    return Node(
        serial=f"{SERIAL_PREFIX}{index:06d}",
        hostname=f"gpu-{index:05d}",
        sku=skus[sku_of(index)],
        rack=racks[index // RACK_HEIGHT],
        position=index % RACK_HEIGHT + 1,
        bmc_address=f"https://10.{index // 65536}.{index // 256 % 256}.{index % 256}",
        bmc_username="root",
        bmc_password=secrets.token_urlsafe(12),
        mac_addresses=[
            f"02:5c:{index >> 16 & 255:02x}:{index >> 8 & 255:02x}:{index & 255:02x}:01"
        ],
        state=state,
        manifest=manifests[manifest_of(index)] if state in PROVISIONED else None,
        attention="Reseat GPU 3" if state == S.QUARANTINED and index % 40 == 0 else "",
    )


def _run_for(node: Node, index: int, manifests: dict, now) -> Run | None:
    state = node.state
    if state == S.ENROLLED:
        return None
    if state in PROVISIONED:
        manifest = manifests[manifest_of(index)]
    else:  # provisioning or failed: a first run, on the published manifest
        manifest = manifests[published_of(index)]
    status = {S.FAILED: RunStatus.FAILED}.get(state, RunStatus.SUCCEEDED)
    if state in ACTIVE:
        status = RunStatus.WAITING if index % 2 else RunStatus.RUNNING
    done = (index * 3) % (len(PHASES) - 1) if state == S.PROVISIONING else len(PHASES) - 1
    return Run(
        node=node,
        manifest=manifest,
        status=status,
        current_phase=PHASES[done].name,
        last_error="bios_firmware: the BMC refused the image" if state == S.FAILED else "",
        created_at=now - timedelta(hours=2),
        started_at=now - timedelta(hours=2),
    )


def _runs_and_gates(nodes: list[Node], indices: range, manifests: dict) -> None:
    now = timezone.now()
    planned = [(_run_for(n, i, manifests, now), i) for n, i in zip(nodes, indices, strict=True)]
    runs = Run.objects.bulk_create([r for r, _ in planned if r is not None], batch_size=500)
    index_of = {r.node_id: i for r, i in planned if r is not None}
    records, gates = [], []
    for run in runs:
        index = index_of[run.node_id]
        if run.status in (RunStatus.RUNNING, RunStatus.WAITING):
            done = PHASES.index(next(p for p in PHASES if p.name == run.current_phase))
            records += _phase_records(run, done, index)
        if run.node.state == S.AWAITING_APPROVAL:
            failed = index % 3 == 0
            for gate in (GateName.GPU_HEALTH, GateName.FABRIC):
                bad = failed and gate == GateName.FABRIC
                gates.append(
                    GateResult(
                        run=run,
                        node_id=run.node_id,
                        gate=gate,
                        verdict=Verdict.FAIL if bad else Verdict.PASS,
                    )
                )
    PhaseRecord.objects.bulk_create(records, batch_size=1000)
    GateResult.objects.bulk_create(gates, batch_size=1000)


def _phase_records(run: Run, done: int, index: int) -> list[PhaseRecord]:
    """The run's finished phases, then the one it is in (a soak reports its own progress)."""
    records = [
        PhaseRecord(run=run, phase=p.name, order=o, status=PhaseStatus.DONE, attempts=1)
        for o, p in enumerate(PHASES[:done])
    ]
    waiting = run.status == RunStatus.WAITING
    records.append(
        PhaseRecord(
            run=run,
            phase=PHASES[done].name,
            order=done,
            status=PhaseStatus.WAITING if waiting else PhaseStatus.RUNNING,
            attempts=1,
            wait_reason="the BMC's update task" if waiting else "",
        )
    )
    return records


def _inventory(nodes: list[Node], indices: range, parts_per_kind: int | None) -> None:
    batch: list[Component] = []
    for node, index in zip(nodes, indices, strict=True):
        for kind, prefix, how_many, models in PARTS[sku_of(index)]:
            for slot in range(min(how_many, parts_per_kind or how_many)):
                model = models[(index + slot) % len(models)]
                name = f"{prefix} {slot}" if how_many > 1 else prefix
                batch.append(
                    Component(
                        node=node,
                        kind=kind,
                        slot=name,
                        model=model,
                        serial=f"{node.serial}-{kind}{slot}",
                        firmware_version=part_version(kind, index, slot),
                    )
                )
        if len(batch) >= 5000:
            Component.objects.bulk_create(batch)
            batch = []
    Component.objects.bulk_create(batch)
