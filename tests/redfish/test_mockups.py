"""redfish_probe's code path reads each captured BMC in ../shared/redfish-mockups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provisioning.redfish import RedfishClient
from provisioning.redfish.probe import probe

from .servers import mockup_answers, serve

MOCKUPS = Path(__file__).resolve().parents[2].parent / "shared" / "redfish-mockups"
FOLDERS = (
    sorted(p.name for p in MOCKUPS.iterdir() if (p / "index.json").exists())
    if MOCKUPS.is_dir()
    else []
)


def expected(folder: Path) -> dict:
    """What the capture itself says, read straight from its files."""
    root = json.loads((folder / "index.json").read_text())
    systems_dir = folder / "Systems"
    members = json.loads((systems_dir / "index.json").read_text())["Members"]
    system_path = members[0]["@odata.id"].rstrip("/").split("/redfish/v1/", 1)[1]
    system = json.loads((folder / system_path / "index.json").read_text())
    inventory_dir = folder / "UpdateService" / "FirmwareInventory"
    firmware = json.loads((inventory_dir / "index.json").read_text())["Members"]
    return {"root": root, "system": system, "firmware_count": len(firmware)}


@pytest.mark.skipif(not FOLDERS, reason="../shared/redfish-mockups is absent")
@pytest.mark.parametrize("name", FOLDERS)
def test_probe_reads_system_serial_and_firmware(name):
    folder = MOCKUPS / name
    want = expected(folder)
    with serve(mockup_answers(folder)) as url:
        with RedfishClient(url, "reader", "not-used-by-mockups", retries=0) as client:
            result = probe(client)
    system = want["system"]
    assert result["system_id"] == system["Id"]
    assert result["model"] == (system.get("Model") or "")
    assert result["manufacturer"] == (system.get("Manufacturer") or "")
    if system.get("SerialNumber"):
        assert result["serial"] == system["SerialNumber"]
    assert result["power_state"] == (system.get("PowerState") or "Unknown")
    assert result["firmware_inventory"] is not None, result["unsupported"]
    # Dell-style rollback entries aside, every member of the capture is read.
    assert len(result["firmware_inventory"]) == want["firmware_count"]
    assert all(item["version"] for item in result["firmware_inventory"] if item["updateable"])


def test_hpe_capture_needs_case_insensitive_paths():
    folder = MOCKUPS / "hpe-ilo5-apollo6500-xl675d-a100"
    if not folder.is_dir():
        pytest.skip("HPE capture absent")
    system = json.loads((folder / "Systems" / "1" / "index.json").read_text())
    assert system["Bios"]["@odata.id"] == "/redfish/v1/systems/1/bios/"  # lower-case link
    with serve(mockup_answers(folder)) as url:
        with RedfishClient(url, "reader", "x", retries=0) as client:
            assert len(client.bios_attributes()) > 100
            assert client.mac_addresses()


@pytest.mark.skipif(not FOLDERS, reason="../shared/redfish-mockups is absent")
def test_expand_is_asked_for_only_as_each_capture_offers_it():
    from provisioning.redfish.client import expand_query

    offered = {
        name: expand_query(json.loads((MOCKUPS / name / "index.json").read_text()))
        for name in FOLDERS
    }
    assert offered == {
        "ami-megarac-gigabyte": "$expand=.($levels=1)",
        "dmtf-public-rackmount1": "$expand=.($levels=1)",
        "hpe-ilo5-apollo6500-xl675d-a100": "$expand=.($levels=1)",
        "openbmc-bmcweb-stock": None,  # bmcweb as shipped: $expand switched off
    }
