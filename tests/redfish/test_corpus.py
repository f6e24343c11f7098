"""Every real capture in captures/ served by sushy-static over HTTP and probed right.

The expectations are read off the captures' own payloads (SOURCES.md says where each came
from): the node's system and manager, its identity (on the chassis where the system has none),
its GPUs, NICs, DPUs and drives, and where each firmware entry belongs and whether it runs.
"""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from provisioning.redfish import RedfishClient
from provisioning.redfish.probe import probe

from .static import CAPTURES, STATIC_BIN, captures, sushy_static

pytestmark = pytest.mark.skipif(
    shutil.which(str(STATIC_BIN)) is None, reason="sushy-static is not installed"
)

# capture: (system, manager, manufacturer, model, serial, gpus, gpu model, nics, fabric nics,
#           dpus, drives)
IDENTITY = {
    "ami-megarac-gigabyte": ("Self", "Self", "GIGABYTE", "H262-Z63-00", "GJG9NF512A000302",
                             0, None, 0, 0, 0, 1),
    "dell-idrac9-r750": ("System.Embedded.1", "iDRAC.Embedded.1", "Dell Inc.", "PowerEdge R750",
                         "CNIVC0014M0388", 1, "NVIDIA H100 PCIe", 3, 1, 1, 3),
    "dmtf-public-rackmount1": ("437XR1138R2", "BMC", "Contoso", "3500", "437XR1138R2",
                               0, None, 0, 0, 0, 0),
    # One BMC, two nodes: Node0 is chosen, managed by the BMC (ManagerForServers), not an MCU.
    "hpe-cray-ex235n": ("Node0", "BMC", "HPE", "HPE Cray EX235n", "DP20300012",
                        4, "NVIDIA_A100-SXM4-40GB", 8, 0, 0, 0),
    # iLO 5 lists the HGX A100 GPUs only in its firmware inventory.
    "hpe-ilo5-apollo6500-xl675d-a100": ("1", "1", "HPE", "ProLiant XL675d Gen10 Plus",
                                        "JS05NP0896", 8, "NVIDIA A100-SXM4-40GB", 0, 0, 0, 2),
    "hpe-ilo5-dl385-gen10plus-v2": ("1", "1", "HPE", "ProLiant DL385 Gen10 Plus v2",
                                    "MXQ302099S", 0, None, 2, 2, 1, 18),
    "lenovo-xcc-sr670v2": ("1", "1", "Lenovo", "ThinkSystem SR670 V2", "J105958B",
                           8, "", 1, 0, 1, 4),
    "nvidia-bluefield3-bmc": ("Bluefield", "Bluefield_BMC", "https://www.mellanox.com",
                              "BlueField-3 SmartNIC Main Card", "MT2423600ANG",
                              0, None, 1, 1, 0, 0),
    # The host, not the HGX baseboard listed beside it; GPUs from the baseboard's Processors.
    "nvidia-dgx-h100": ("DGX", "BMC", "NVIDIA", "DGXH100", "1662923610124",
                        8, "H100 80GB HBM3", 12, 0, 0, 0),
    # GB200 and GH200 systems carry no identity: it is on the chassis they link to.
    "nvidia-gb200": ("System_0", "BMC_0", "NVIDIA", "GB200 NVL", "1583124820080",
                     4, "", 4, 4, 2, 9),
    "nvidia-gh200": ("System_0", "BMC_0", "NVIDIA", "P3809", "1580624650610",
                     2, "NVIDIA GH200 96GB HBM3", 0, 0, 0, 0),
    "openbmc-bmcweb-stock": ("system", "bmc", "", "", "", 0, None, 0, 0, 0, 0),
    "supermicro-hgx-sys821ge": ("1", "1", "Supermicro", "SYS-821GE-TNHR", "S889914X3710910",
                                8, "H100 80GB HBM3", 9, 8, 1, 8),
}  # fmt: skip

# Captures whose GPUs carry no firmware version anywhere the probe can link to them.
NO_GPU_FIRMWARE = {"dell-idrac9-r750", "hpe-cray-ex235n", "nvidia-gb200"}

# Where firmware entries belong: (kind, part) -> count, for the kinds a firmware phase manages.
MANAGED = {
    "ami-megarac-gigabyte": {("bmc", "bmc"): 1, ("bios", "bios"): 1},
    # The BlueField-2 on NIC.Slot.5: its FQDD names the adapter, whose model says DPU.
    "dell-idrac9-r750": {("bmc", "bmc"): 1, ("bios", "bios"): 1, ("nic", "nic"): 6,
                         ("dpu", "dpu"): 1, ("nvme", "drive"): 3},
    "dmtf-public-rackmount1": {("bmc", "bmc"): 1, ("bios", "bios"): 1},
    # Node0's own entries ("Node0.*") and the blade's; Node1's belong to the other node.
    "hpe-cray-ex235n": {("bmc", "bmc"): 1, ("bios", "bios"): 1, ("nic", "nic"): 4},
    "hpe-ilo5-apollo6500-xl675d-a100": {("bmc", "bmc"): 1, ("bios", "bios"): 1,
                                        ("hgx", "baseboard"): 1, ("hgx", "nvswitch"): 1,
                                        ("nic", "nic"): 1},
    "hpe-ilo5-dl385-gen10plus-v2": {("bmc", "bmc"): 1, ("bios", "bios"): 1, ("nic", "nic"): 3,
                                    ("dpu", "dpu"): 1, ("nvme", "drive"): 16},
    "lenovo-xcc-sr670v2": {("bmc", "bmc"): 1, ("bios", "bios"): 1, ("nic", "nic"): 1,
                           ("dpu", "dpu"): 3, ("nvme", "drive"): 4},
    "nvidia-bluefield3-bmc": {("bmc", "bmc"): 1, ("dpu", "dpu"): 1, ("dpu", "dpu_software"): 8},
    "nvidia-dgx-h100": {("bmc", "bmc"): 1, ("bios", "bios"): 1, ("hgx", "hmc"): 1,
                        ("hgx", "erot"): 15, ("hgx", "gpu"): 8, ("hgx", "nvswitch"): 4,
                        ("hgx", "fpga"): 1, ("hgx", "retimer"): 8, ("hgx", "pcie_switch"): 1},
    "nvidia-gb200": {("bmc", "bmc"): 1, ("bios", "bios"): 1, ("hgx", "hmc"): 1,
                     ("hgx", "erot"): 5, ("hgx", "fpga"): 2, ("hgx", "cpu"): 2,
                     ("hgx", "cpld"): 1, ("nic", "nic"): 1, ("dpu", "dpu"): 2},
    "nvidia-gh200": {("bmc", "bmc"): 1, ("bios", "bios"): 1, ("hgx", "hmc"): 1,
                     ("hgx", "erot"): 6, ("hgx", "gpu"): 2, ("hgx", "fpga"): 2,
                     ("hgx", "cpu"): 2, ("hgx", "cpld"): 1},
    "openbmc-bmcweb-stock": {("bmc", "bmc"): 1},
    "supermicro-hgx-sys821ge": {("bmc", "bmc"): 1, ("bios", "bios"): 1, ("nic", "nic"): 9,
                                ("dpu", "dpu"): 1, ("nvme", "drive"): 8, ("hgx", "hmc"): 1,
                                ("hgx", "erot"): 15, ("hgx", "gpu"): 8, ("hgx", "nvswitch"): 4,
                                ("hgx", "fpga"): 1, ("hgx", "retimer"): 8,
                                ("hgx", "pcie_switch"): 1},
}  # fmt: skip

# Copies that do not run, by the capture's own marks (id convention, Status.State, no version).
NOT_RUNNING = {
    "dell-idrac9-r750": {"Previous-159-1.2.4__BIOS.Setup.1-1",
                         "Previous-25227-4.40.29.00__iDRAC.Embedded.1-1",
                         "Current-159-1.8.2__BIOS.Setup.1-1",
                         "Current-107649-3.48__RAID.Backplane.Firmware.1",
                         "Current-108089-21.80.16.95__NIC.Integrated.1-1-1",
                         "Current-108089-21.80.16.95__NIC.Integrated.1-2-1",
                         "Current-108255-21.80.9__NIC.Embedded.1-1-1",
                         "Current-108255-21.80.9__NIC.Embedded.2-1-1"},
    "hpe-cray-ex235n": {"Recovery", "Node0.ManagementEthernet"},
    "hpe-ilo5-apollo6500-xl675d-a100": {"10", "11", "12"},  # redundant ROM; "N/A" versions
    "hpe-ilo5-dl385-gen10plus-v2": {"8"},
    "lenovo-xcc-sr670v2": {"BMC-Primary-Pending", "BMC-Backup", "UEFI-Pending"},
    "nvidia-bluefield3-bmc": {"golden_image_arm", "golden_image_config", "golden_image_nic"},
    "nvidia-gb200": {"HGX_FW_GPU_0", "HGX_FW_GPU_1", "HGX_FW_GPU_2", "HGX_FW_GPU_3"},
    "supermicro-hgx-sys821ge": {"Backup_BMC", "Golden_BMC", "Staging_BMC", "Backup_BIOS",
                                "Golden_BIOS", "Staging_BIOS", "Golden_CPLD_Motherboard"},
}  # fmt: skip

# Entries that are what the issue named as mis-sorted before: each must stay out of BMC/BIOS.
NOT_BMC_OR_BIOS = {
    "dell-idrac9-r750": ["Installed-104684-4.0.1__ServiceModule.Embedded.1",
                         "Installed-25806-4301A56__Diagnostics.Embedded.1:LC.Embedded.1",
                         "Installed-18981-21.03.10__DriverPack.Embedded.1:LC.Embedded.1"],
    "nvidia-dgx-h100": ["HGX_FW_BMC_0", "EROT_BMC_0", "EROT_BIOS_0", "HGX_FW_ERoT_BMC_0"],
    "supermicro-hgx-sys821ge": ["BIOS_ME", "Capsule_BIOS"],
}  # fmt: skip


def test_the_corpus_is_every_capture_kept():
    assert sorted(IDENTITY) == captures()
    assert len(captures()) >= 8


@pytest.fixture(scope="module", params=captures())
def probed(request, tmp_path_factory):
    name = request.param
    workdir = tmp_path_factory.mktemp(name)
    with sushy_static(CAPTURES / name, workdir) as url:
        with RedfishClient(
            url, "reader", "not-used-by-captures", retries=0, allow_plain_http=True
        ) as client:
            yield name, probe(client)


def test_identity_and_topology(probed):
    name, result = probed
    system, manager, maker, model, serial, *_ = IDENTITY[name]
    assert (result["system_id"], (result["manager"] or {}).get("id")) == (system, manager)
    assert (result["manufacturer"], result["model"], result["serial"]) == (maker, model, serial)


def test_gpus_nics_dpus_drives(probed):
    name, result = probed
    *_, gpus, gpu_model, nics, fabric, dpus, drives = IDENTITY[name]
    assert len(result["gpus"]) == gpus
    if gpus:
        assert {g["model"] for g in result["gpus"]} == {gpu_model}
    assert len(result["nics"]) == nics
    assert sum(nic["fabric"] for nic in result["nics"]) == fabric
    assert len(result["dpus"]) == dpus
    assert all("bluefield" in (d["model"] + d["part_number"]).lower() or d["part_number"]
               for d in result["dpus"])  # fmt: skip
    assert len(result["drives"]) == drives
    # Every GPU's firmware, from the device or from the inventory entry that links to it.
    assert all(gpu["firmware"] for gpu in result["gpus"]) == (name not in NO_GPU_FIRMWARE)


def test_firmware_placed_and_only_running_copies_counted(probed):
    name, result = probed
    inventory = result["firmware_inventory"]
    assert inventory is not None, result["unsupported"]
    managed = Counter(
        (item["kind"], item["part"])
        for item in inventory
        if item["kind"] in ("bmc", "bios", "hgx", "nic", "dpu", "nvme")
    )
    assert dict(managed) == MANAGED[name]
    assert set(result["firmware_not_running"]) == NOT_RUNNING.get(name, set())
    assert all(item["running"] for item in inventory)
    assert all(item["version"] == item["version"].strip() for item in inventory)
    by_id = {item["id"]: item for item in inventory}
    for entry_id in NOT_BMC_OR_BIOS.get(name, []):
        assert by_id[entry_id]["kind"] not in ("bmc", "bios"), entry_id


# The model an entry is for, where a kind holds several (what a per-model target matches).
MODELS = {
    "nvidia-gb200": {"CX7_0": "ConnectX-7", "NIC_0": "BlueField-3"},
    "supermicro-hgx-sys821ge": {"NIC1": "MCX75310AAS-NEAT", "NIC10": "MBF2M516C-CECOT",
                                "NVMeSSDA11": "MZQL27T6HBLA-00A07"},
    "lenovo-xcc-sr670v2": {"Disk1": "Micron_7450_MTFDKBA960TFR",
                           "Disk3": "Micron_7450_MTFDKBZ7T6TFR"},
    "dell-idrac9-r750": {"Installed-0-24.40.10.00__NIC.Slot.5-1": "BlueField-2 SmartNIC Main Card"},
}  # fmt: skip


def test_entries_carry_the_model_of_what_they_run_on(probed):
    name, result = probed
    by_id = {item["id"]: item["model"] for item in result["firmware_inventory"] or []}
    for entry_id, model in MODELS.get(name, {}).items():
        assert by_id[entry_id] == model, entry_id
