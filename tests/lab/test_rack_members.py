"""A lab GB200 rack's members behind their own BMCs (issue 34), with the lab clock stopped: each
member is identified from the Redfish resource its rack SKU names and enrolled like a node; a
switch tray's NVLink fabric forms after its NVOS boots, as Greenlight's stage check reads it; a
power shelf trips when a compute tray boots before the fabric formed, as the rack-wide gate reads
it, and not when the staged order is kept."""

from __future__ import annotations

import pytest

from acceptance.rack_judge import read_shelf, shelf_findings
from fleet.choices import NodeKind
from lab.hall import LabHall
from lab.node import BOOT_SECONDS
from lab.rack import FABRIC_FORM_SECONDS, LabRackFabric
from lab.rack_documents import MEMBER_SKU, RackShape, enroll_rack, publish_rack_documents
from provisioning.rack.verify import fabric_formed
from provisioning.redfish.bmc import session_pool

SHAPE = RackShape("t", shelves=2, switches=2, trays=3)


@pytest.fixture
def rack(db):
    with LabHall(len(SHAPE.layout()), flavours=SHAPE.flavours(), speed=0, seed=3) as hall:
        fabric = LabRackFabric(hall, "LAB-T")
        sku = publish_rack_documents(SHAPE, "http://127.0.0.1:9", soak_hours=0.25)
        system = enroll_rack(hall, sku, site="lab", rack="LAB-T")
        yield hall, fabric, system
        session_pool().close_all()


def nodes(system, kind):
    return list(system.members().filter(kind=kind).order_by("member_index"))


def boot(hall, lab_node):
    lab_node.reset("On", hall.clock.now())
    hall.advance(BOOT_SECONDS + 1)


def test_each_member_is_enrolled_as_the_kind_its_bmc_says(rack):
    hall, _, system = rack
    assert system.missing_members() == []
    members = list(system.members().order_by("position"))
    assert [m.kind for m in members] == SHAPE.layout()
    for node, lab_node in zip(members, hall.nodes, strict=True):
        # Read from the BMC: the serial it reports, the member SKU of the kind it matched.
        assert node.serial == lab_node.serial
        assert node.sku.name == MEMBER_SKU[node.kind]
    assert [n.member_index for n in nodes(system, NodeKind.COMPUTE_TRAY)] == [1, 2, 3]
    assert nodes(system, NodeKind.COMPUTE_TRAY)[0].sku.gpu_count == 4


def test_the_switch_fabric_forms_after_nvos_boots(rack):
    hall, fabric, system = rack
    switches = nodes(system, NodeKind.SWITCH_TRAY)
    off = fabric_formed(switches)
    assert off.holds is False and "Disabled" in off.reason, off
    for lab_node in fabric.switches:
        boot(hall, lab_node)
    forming = fabric_formed(switches)
    assert forming.holds is False and "NVLink fabric Starting" in forming.reason, forming
    hall.advance(FABRIC_FORM_SECONDS)
    assert fabric_formed(switches).holds is True
    assert fabric.fabric_formed()


def test_a_shelf_trips_when_a_tray_boots_before_the_fabric_formed(rack):
    hall, fabric, system = rack
    shelves = nodes(system, NodeKind.POWER_SHELF)
    fabric.shelves[1].faults.set("trips_if_compute_early")
    for lab_node in fabric.switches:
        boot(hall, lab_node)  # booted, but their fabric still forming
    boot(hall, fabric.trays[0])
    assert fabric.shelves[1].tripped and not fabric.shelves[0].tripped
    seen = [read_shelf(shelf) for shelf in shelves]
    assert [(s["power_state"], s["health"]) for s in seen] == [("On", "OK"), ("Off", "Critical")]
    (finding,) = shelf_findings(shelves, seen)
    assert finding.part == "power shelf 2" and finding.part_serial == shelves[1].serial
    assert finding.message.startswith(f"power shelf 2 ({shelves[1].serial}): output Off")


def test_a_shelf_holds_when_the_trays_boot_after_the_fabric(rack):
    hall, fabric, system = rack
    fabric.shelves[1].faults.set("trips_if_compute_early")
    for lab_node in fabric.switches:
        boot(hall, lab_node)
    hall.advance(FABRIC_FORM_SECONDS)
    for lab_node in fabric.trays:
        boot(hall, lab_node)
    shelves = nodes(system, NodeKind.POWER_SHELF)
    assert not any(s.tripped for s in fabric.shelves)
    assert shelf_findings(shelves, [read_shelf(shelf) for shelf in shelves]) == []
