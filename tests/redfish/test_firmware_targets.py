"""A manifest target manages the running entries of its parts and models, nothing else."""

from __future__ import annotations

import pytest

from fleet.manifests import DocumentInvalid, parse_manifest
from provisioning.core.firmware_targets import at_target, managed, targets
from provisioning.redfish import FirmwareItem

SHA = "a" * 64


def item(entry_id, kind, part, version, *, model="", running=True) -> FirmwareItem:
    return FirmwareItem(entry_id, f"/x/{entry_id}", entry_id, version, True, kind=kind,
                        part=part, model=model, running=running)  # fmt: skip


DGX = [
    item("HostBMC_0", "bmc", "bmc", "23.11.21"),
    item("HGX_FW_BMC_0", "hgx", "hmc", "HGX-22.10-1-rc57"),
    item("HGX_FW_GPU_SXM_1", "hgx", "gpu", "96.00.89.00.01"),
    item("HGX_FW_ERoT_BMC_0", "hgx", "erot", "00.02.0150.0000_n00"),
    item("Golden_BMC", "bmc", "bmc", "01.00.26", running=False),
]


def manifest(firmware: str) -> str:
    return f"sku: hgx\nversion: 1.0.0\nfirmware:\n{firmware}"


def test_by_default_an_hgx_target_manages_the_hmc_only():
    block = {"version": "HGX-22.10-1-rc57", "url": "https://x/hgx.fwpkg", "sha256": SHA}
    found = managed("hgx", DGX, block)
    assert [i.id for i, _ in found] == ["HGX_FW_BMC_0"]
    assert all(at_target(i, t) for i, t in found)


def test_a_target_can_name_the_parts_it_sets():
    block = {"version": "96.00.89.00.01", "url": "https://x/gpu.fwpkg", "sha256": SHA,
             "parts": ["gpu"]}  # fmt: skip
    assert [i.id for i, _ in managed("hgx", DGX, block)] == ["HGX_FW_GPU_SXM_1"]


def test_copies_that_do_not_run_are_never_managed():
    block = {"version": "23.11.21", "url": "https://x/bmc.bin", "sha256": SHA}
    assert [i.id for i, _ in managed("bmc", DGX, block)] == ["HostBMC_0"]


def test_each_model_answers_to_its_own_artifact():
    drives = [
        item("Disk1", "nvme", "drive", "E2MU200", model="Micron_7450_MTFDKBA960TFR"),
        item("NVMeSSD1", "nvme", "drive", "GDC5602Q", model="MZQL27T6HBLA-00A07"),
    ]
    text = manifest(
        "  nvme:\n    version: GDC7302Q\n    url: https://x/samsung.bin\n"
        f"    sha256: {SHA}\n    model: MZQL27T6HBLA\n    models:\n      Micron_7450:\n"
        f"        version: E2MU300\n        url: https://x/micron.bin\n        sha256: {SHA}\n"
    )
    block = parse_manifest(text).spec["firmware"]["nvme"]
    assert [t.model for t in targets("nvme", block)] == ["Micron_7450", "MZQL27T6HBLA"]
    found = {i.id: t.version for i, t in managed("nvme", drives, block)}
    assert found == {"Disk1": "E2MU300", "NVMeSSD1": "GDC7302Q"}


def test_a_manifest_without_parts_or_models_parses_as_before():
    text = manifest(f"  bios:\n    version: '1.4'\n    url: https://x/b.bin\n    sha256: {SHA}\n")
    assert parse_manifest(text).spec["firmware"]["bios"] == {
        "version": "1.4",
        "url": "https://x/b.bin",
        "sha256": SHA,
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("    parts: [gpus]\n", "unknown part 'gpus'"),
        ("    parts: []\n", "must be a non-empty list of part names"),
        ("    models:\n      CX7:\n        version: '1'\n", "url"),
    ],
)
def test_bad_targeting_is_named_with_its_field(extra, message):
    text = manifest(
        f"  hgx:\n    version: '1'\n    url: https://x/h.bin\n    sha256: {SHA}\n{extra}"
    )
    with pytest.raises(DocumentInvalid) as refused:
        parse_manifest(text)
    assert message in str(refused.value)
