"""The fleet firmware view: versions per kind and model, the version each manifest wants, who is
behind; its filters, its bounded queries, its CSV, its API, its page, and NetBox's board firmware."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from console.dcim.client import NetBoxClient
from console.dcim.netbox import sync
from console.filtersets import FirmwareFilterSet
from console.firmware import firmware_rows, wanted_version
from fleet.choices import ComponentKind as K
from fleet.choices import NodeState
from fleet.models import Component, Node
from tests import factories
from tests.api.conftest import client_for
from tests.api.fake_netbox import serve_fake_netbox
from tests.support import scenes

# The sample manifest (hgx-h100-8gpu 1.0.0) wants these.
WANTED = {K.BMC: "7.10.30.00", K.BIOS: "2.3.5", K.HGX: "1.6.0", K.NIC: "28.43.1014"}
GPU = ("H100-SXM5-80GB", "96.00.99.00.01")  # no manifest target: listed, never behind


def add_parts(node: Node, bmc: str, nic: tuple[str, str] = (WANTED[K.NIC],) * 2, **extra) -> None:
    """A BMC, a BIOS, two NICs and two GPUs, with the given running versions."""
    parts = [
        (K.BMC, "BMC", "iDRAC9", bmc),
        (K.BIOS, "BIOS", "BIOS", extra.get("bios", WANTED[K.BIOS])),
        (K.NIC, "NIC 0", "ConnectX-7", nic[0]),
        (K.NIC, "NIC 1", "ConnectX-7", nic[1]),
        (K.GPU, "GPU 0", *GPU),
        (K.GPU, "GPU 1", *GPU),
    ]
    Component.objects.bulk_create(
        Component(
            node=node,
            kind=kind,
            slot=slot,
            model=model,
            firmware_version=fw,
            serial=f"{node.serial}-{slot}",
        )
        for kind, slot, model, fw in parts
    )


@pytest.fixture
def fleet(db, manifest):
    """Four nodes in two sites: on target, behind, on the manifest by its run only, on none."""
    r01 = factories.make_rack("R01", site="hall-1")
    r02 = factories.make_rack("R02", site="hall-2")
    on_target = factories.make_node("FW-OK", rack=r01, manifest=manifest)
    behind = factories.make_node("FW-OLD", rack=r01, manifest=manifest)
    by_run = factories.make_node("FW-RUN", rack=r02)
    bare = factories.make_node("FW-NEW", rack=r02)
    for node in (on_target, behind):
        scenes.walk(node, NodeState.IN_SERVICE)
    scenes.walk(by_run, NodeState.PROVISIONING)
    scenes.make_run(by_run, phases_done=3)  # a first run: the node is on its run's manifest
    add_parts(on_target, WANTED[K.BMC])
    add_parts(behind, "7.10.20.00", nic=(WANTED[K.NIC], "28.39.1002"))
    add_parts(by_run, "7.10.30.00")
    add_parts(bare, "7.00.00.00")
    return {n.serial: n for n in (on_target, behind, by_run, bare)}


def row_of(rows, kind, version, manifest_version="1.0.0"):
    (row,) = [
        r
        for r in rows
        if (r.kind, r.version, r.manifest_version) == (kind, version, manifest_version)
    ]
    return row


def test_rows_match_the_stored_inventory(fleet, manifest):
    rows = firmware_rows(Node.objects.all())
    # Row for row: every (kind, model, version, manifest) of the stored components, counted.
    stored = Counter(
        (c.kind, c.model, c.firmware_version, c.node.serial != "FW-NEW")
        for c in Component.objects.select_related("node")
    )
    assert {(r.kind, r.model, r.version, bool(r.manifest_version)): r.parts for r in rows} == stored
    assert sum(r.parts for r in rows) == Component.objects.count() == 24

    current = row_of(rows, K.BMC, WANTED[K.BMC])
    assert (current.manifest_version, current.wanted) == ("1.0.0", WANTED[K.BMC])
    assert (current.parts, current.nodes, current.nodes_behind) == (2, 2, 0)  # FW-OK, FW-RUN
    old_bmc = row_of(rows, K.BMC, "7.10.20.00")
    assert (old_bmc.wanted, old_bmc.nodes_behind, old_bmc.behind_serials) == (
        WANTED[K.BMC],
        1,
        ["FW-OLD"],
    )
    old_nic = row_of(rows, K.NIC, "28.39.1002")
    assert (old_nic.parts, old_nic.nodes_behind, old_nic.behind_serials) == (1, 1, ["FW-OLD"])
    nic = row_of(rows, K.NIC, WANTED[K.NIC])  # FW-OK's two, FW-OLD's other one, FW-RUN's two
    assert (nic.parts, nic.nodes, nic.nodes_behind) == (5, 3, 0)
    gpus = row_of(rows, K.GPU, GPU[1])
    assert (gpus.parts, gpus.nodes, gpus.wanted, gpus.nodes_behind) == (6, 3, "", 0)
    # A node on no manifest yet wants nothing, so is behind on nothing.
    never = row_of(rows, K.BMC, "7.00.00.00", manifest_version="")
    assert (never.manifest_version, never.wanted, never.nodes_behind) == ("", "", 0)
    assert {s for r in rows for s in r.behind_serials} == {"FW-OLD"}


def test_wanted_version_follows_the_model_and_the_parts_a_target_manages():
    spec = {
        "firmware": {
            "nvme": {
                "version": "GDC7402Q",
                "url": "u",
                "sha256": "s",
                "models": {"MZQL27T6HBLA": {"version": "GDC5902Q", "url": "u", "sha256": "s"}},
            },
            "hgx": {"version": "1.6.0", "url": "u", "sha256": "s", "parts": ["gpu"]},
        }
    }
    assert wanted_version(K.NVME, "MZQL27T6HBLA-00A07", spec) == "GDC5902Q"
    assert wanted_version(K.NVME, "PM1743", spec) == "GDC7402Q"
    assert wanted_version(K.HGX, "HGX", spec) == ""  # a target of the GPUs only: not the tray's
    assert wanted_version(K.GPU, GPU[0], spec) == ""
    assert wanted_version(K.BMC, "iDRAC9", spec) == ""


def bmc_nodes(**params) -> dict[str, int]:
    """Nodes per running BMC version among the nodes the filters keep (one BMC a node)."""
    nodes = FirmwareFilterSet(params, queryset=Node.objects.all()).qs
    out: Counter[str] = Counter()
    for row in firmware_rows(nodes):
        if row.kind == K.BMC:
            out[row.version] += row.nodes
    return dict(out)


def test_filters_narrow_the_rows(fleet):
    old, new, current = "7.10.20.00", "7.00.00.00", WANTED[K.BMC]
    assert bmc_nodes() == {current: 2, old: 1, new: 1}
    assert bmc_nodes(site=fleet["FW-OK"].rack.site_id) == {current: 1, old: 1}
    assert bmc_nodes(site_name="hall-2") == {current: 1, new: 1}
    assert bmc_nodes(rack=fleet["FW-RUN"].rack_id) == {current: 1, new: 1}
    assert bmc_nodes(rack_name="R01") == {current: 1, old: 1}
    assert bmc_nodes(state=[NodeState.PROVISIONING]) == {current: 1}
    assert bmc_nodes(sku=fleet["FW-OK"].sku_id) == bmc_nodes()
    assert bmc_nodes(sku_name="another-sku") == {}
    # A decommissioned node has left the fleet: counted only when asked for.
    Node.objects.filter(serial="FW-OLD").update(state=NodeState.DECOMMISSIONED)
    assert bmc_nodes() == {current: 2, new: 1}
    assert bmc_nodes(state=[NodeState.DECOMMISSIONED]) == {old: 1}


def queries_for_fleet() -> int:
    with CaptureQueriesContext(connection) as captured:
        rows = firmware_rows(Node.objects.all())
    assert any(r.behind_serials for r in rows)
    return len(captured.captured_queries)


def test_queries_do_not_grow_with_the_fleet(db, manifest):
    rack = factories.make_rack("R09")
    for n in range(30):
        node = factories.make_node(f"FWQ{n:03d}", rack=rack, position=n + 1, manifest=manifest)
        add_parts(node, WANTED[K.BMC] if n % 2 else "7.10.20.00", bios=f"2.{n % 3}.0")
        if n == 2:
            small = queries_for_fleet()
    assert small <= 3
    assert queries_for_fleet() == small


def test_csv_export_defuses_a_formula_and_matches_the_rows(fleet, dora):
    node = fleet["FW-OLD"]
    Component.objects.filter(node=node, kind=K.BIOS).update(model='=HYPERLINK("x")')
    response = client_for(dora).get(reverse("api:firmware-export-csv"), {"site_name": "hall-1"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert lines[0][:3] == ["kind", "model", "running_version"]
    assert ["bios", '\'=HYPERLINK("x")'] in [line[:2] for line in lines]
    old = [line for line in lines if line[2] == "7.10.20.00"]
    assert old == [
        [
            "bmc",
            "iDRAC9",
            "7.10.20.00",
            "hgx-h100-8gpu",
            "1.0.0",
            WANTED[K.BMC],
            "1",
            "1",
            "1",
            "FW-OLD",
        ]
    ]
    assert len(lines) - 1 == len(firmware_rows(Node.objects.filter(rack__site__name="hall-1")))


def test_api_answers_the_rows_as_json_and_refuses_anonymous_and_roleless(fleet, dora, charlie):
    url = reverse("api:firmware-list")
    response = client_for(dora).get(url, {"state": NodeState.IN_SERVICE})
    assert response.status_code == 200
    in_service = Node.objects.filter(state=NodeState.IN_SERVICE)
    assert response.json() == [r.as_dict() for r in firmware_rows(in_service)]
    assert any(r["behind_serials"] == ["FW-OLD"] for r in response.json())
    assert client_for(None).get(url).status_code == 401
    assert client_for(charlie).get(url).status_code == 403
    assert client_for(None).get(reverse("api:firmware-export-csv")).status_code == 401
    assert client_for(dora).get(url, {"site": "x"}).status_code == 400


def test_page_renders_for_a_viewer_and_is_in_the_nav(fleet, client, bob, charlie):
    client.force_login(bob)
    response = client.get(reverse("console:firmware"), {"rack": fleet["FW-OLD"].rack_id})
    assert response.status_code == 200
    html = response.content.decode()
    assert "ConnectX-7" in html and "28.39.1002" in html and "FW-OLD" in html
    assert "7.00.00.00" not in html  # FW-NEW is in the other rack
    assert reverse("api:firmware-export-csv") in html
    home = client.get(reverse("console:rollouts")).content.decode()
    assert f'href="{reverse("console:firmware")}"' in home
    client.force_login(charlie)
    assert client.get(reverse("console:firmware")).status_code == 403


def test_netbox_carries_the_board_firmware_of_each_device(fleet):
    with serve_fake_netbox() as netbox:
        with NetBoxClient(netbox.url, "nbt_testkey.testsecret") as nb:
            assert sync(nb).errors == []
        devices = {d["serial"]: d for d in netbox.find("dcim/devices")}
        assert devices["FW-OLD"]["custom_fields"]["greenlight_board_firmware"] == (
            "BIOS 2.3.5; BMC 7.10.20.00"
        )
        Component.objects.filter(node=fleet["FW-OLD"], kind=K.BMC).update(
            firmware_version=WANTED[K.BMC]
        )
        with NetBoxClient(netbox.url, "nbt_testkey.testsecret") as nb:
            report = sync(nb)
        assert [(c.action, c.kind, c.name) for c in report.changes] == [
            ("update", "device", "FW-OLD")
        ]
        (device,) = netbox.find("dcim/devices", serial="FW-OLD")
        assert device["custom_fields"]["greenlight_board_firmware"] == "BIOS 2.3.5; BMC 7.10.30.00"
