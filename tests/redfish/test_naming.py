"""The vendor naming table: every row was seen on a capture kept here, and places it right."""

from __future__ import annotations

import json

from provisioning.redfish import classify, naming

from .static import CAPTURES


def inventory_entries() -> list[tuple[str, str, str]]:
    """(capture, Id, Name) of every FirmwareInventory member in the captures."""
    out = []
    for capture in sorted(p for p in CAPTURES.iterdir() if p.is_dir()):
        for folder in ("UpdateService/FirmwareInventory", "updateservice/firmwareinventory"):
            for file in sorted((capture / folder).glob("*/index.json")):
                body = json.loads(file.read_text())
                out.append((capture.name, str(body.get("Id") or ""), str(body.get("Name") or "")))
    return out


def test_every_row_names_where_it_was_seen_and_matches_a_capture():
    entries = inventory_entries()
    unseen = [
        row.pattern
        for row in naming.ROWS
        if not any(row.matches(entry_id, name) for _, entry_id, name in entries)
        # A device no capture holds: the ids its public listing shows (a power shelf's PMC).
        and not any(row.matches(entry_id, "") for entry_id in row.listed)
    ]
    assert unseen == []
    assert all(row.seen_on for row in naming.ROWS)
    assert all(row.part in naming.PARTS for row in naming.ROWS)


def test_rows_that_say_a_copy_does_not_run_match_only_copies():
    copies = {
        (entry_id, name)
        for _, entry_id, name in inventory_entries()
        if naming.not_running(entry_id, name)
    }
    ids = {entry_id for entry_id, _ in copies}
    assert {"Golden_BMC", "Staging_BIOS", "Backup_BMC", "BMC-Primary-Pending", "UEFI-Pending",
            "golden_image_nic", "Previous-25227-4.40.29.00__iDRAC.Embedded.1-1"} <= ids  # fmt: skip
    assert not ids & {"BMC", "BIOS", "BMC-Primary", "UEFI", "HGX_FW_BMC_0"}


def test_a_driver_pack_is_not_a_drive_nor_diagnostics_a_bios():
    assert naming.match("Installed-18981-21.03.10__DriverPack.Embedded.1:LC.Embedded.1",
                        "Dell OS Driver Pack").part == "driver_pack"  # fmt: skip
    assert naming.match("Installed-25806-4301A56__Diagnostics.Embedded.1:LC.Embedded.1",
                        "Dell 64 Bit uEFI Diagnostics").kind is None  # fmt: skip
    assert naming.match("HGX_FW_BMC_0", "Software Inventory").part == "hmc"
    assert naming.match("NVIDIA A100-SXM4-40GB", "") is None  # HPE rows read the name
    assert naming.match("16", "NVIDIA A100-SXM4-40GB").kind == "gpu"
    assert naming.match("something-new", "Mystery Firmware") is None


def test_an_entry_neither_table_nor_structure_places_stays_unknown():
    topo = classify.Topology("/redfish/v1/Systems/1", ["/redfish/v1/Managers/1"], [])
    body = {"Id": "Widget_7", "Name": "Driver Widget", "Version": "1.0", "Status": {}}
    item = classify.entry("/redfish/v1/UpdateService/FirmwareInventory/Widget_7", body, topo,
                          lambda path: None)  # fmt: skip
    assert (item.kind, item.part, item.running) == (None, "unknown", True)
    linked = {**body, "RelatedItem": [{"@odata.id": "/redfish/v1/Managers/1/"}]}
    assert classify.entry("/x", linked, topo, lambda path: None).kind == "bmc"
    pending = {**linked, "Status": {"State": "Disabled"}}
    assert classify.entry("/x", pending, topo, lambda path: None).running is False


def test_vendor_oem_status_says_which_copy_runs():
    dell = {"Oem": {"Dell": {"DellSoftwareInventory": {"Status": "AvailableForInstallation"}}}}
    assert naming.oem_says_not_running(dell)
    dell["Oem"]["Dell"]["DellSoftwareInventory"]["Status"] = "Installed"
    assert not naming.oem_says_not_running(dell)
    assert naming.oem_says_not_running({"Oem": {"Lenovo": {"FirmwareStatus": "Pending"}}})
    assert not naming.oem_says_not_running({"Oem": {"Lenovo": {"FirmwareStatus": "Active"}}})
    assert not naming.oem_says_not_running({"Oem": {"Hpe": {"DeviceClass": "x"}}})


def test_a_delta_power_shelf_pmc_runs_its_primary_partition_as_its_bmc_image():
    # As nvfwupd lists a Delta shelf (naming.DELTA_PMC): the primary is what a PMC update
    # changes, the alt partition a backup copy that keeps the old version.
    primary = naming.match("FW_PMC_primary", "Software Inventory")
    assert (primary.kind, primary.part) == ("bmc", "bmc")
    assert naming.not_running("FW_PMC_primary", "Software Inventory") is None
    assert naming.not_running("FW_PMC_alt", "Software Inventory") is not None
    assert naming.match("FW_PMC_alt", "Software Inventory") is None
    # Only the ids the listing shows: another PMC partition stays the structure's to place.
    assert naming.match("FW_PMC_primary_2", "Software Inventory") is None


def test_placing_the_captures_entries_compiles_no_pattern_again(monkeypatch):
    """Every firmware look places each entry against every row: the rows' patterns are
    compiled once, not looked up in re's cache by each search."""
    entries = inventory_entries()
    expected = [(naming.match(i, n), naming.not_running(i, n)) for _, i, n in entries]
    compiled = [row.regex for row in (*naming.ROWS, *naming.DEVICE_ROWS)]
    topo = classify.Topology("/redfish/v1/Systems/1", ["/redfish/v1/Managers/1"], [])

    def refused(*args, **kwargs):
        raise AssertionError("a row's pattern went through re's module functions")

    for name in ("search", "match", "fullmatch", "compile"):
        monkeypatch.setattr(naming.re, name, refused)
    assert [(naming.match(i, n), naming.not_running(i, n)) for _, i, n in entries] == expected
    assert naming.device("NVIDIA BlueField-3 MBF3M332A").part == "dpu"
    storage = classify.related_place("/redfish/v1/Systems/1/Storage/RAID.1", topo, lambda _: None)
    assert storage is not None and storage.part == "storage_controller"
    assert all(row.regex is pattern for row, pattern in zip(
        (*naming.ROWS, *naming.DEVICE_ROWS), compiled, strict=True))  # fmt: skip
