"""SystemHardware's inventory and identity from recorded real tool output."""

from __future__ import annotations

import asyncio

from agent import erase
from agent.hardware import SystemHardware
from agent.tools import Completed

from .recorded import RecordedTools, sample, two_maker_node


def _node(tmp_path, extra: dict | None = None) -> tuple[SystemHardware, RecordedTools]:
    answers = {
        **two_maker_node(),
        **(extra or {}),
    }
    tools = RecordedTools(answers)
    (tmp_path / "sys" / "block").mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    hw = SystemHardware(capture=tools.capture, sys_root=tmp_path / "sys", dev_root=tmp_path / "dev")
    return hw, tools


def test_identity_is_the_smbios_serial_and_the_physical_ports_macs(tmp_path):
    hw, _ = _node(tmp_path)
    assert asyncio.run(hw.identity()) == {"serial": "D5S0R8000105", "macs": ["02:fc:00:00:00:01"]}


def test_every_drive_reports_its_erase_methods_strongest_first(tmp_path):
    hw, _ = _node(tmp_path)
    drives = asyncio.run(hw.inventory())["drives"]
    assert [(d["index"], d["name"], d["controller"]) for d in drives] == [
        ("0", "/dev/nvme0n1", "/dev/nvme0"),
        ("1", "/dev/nvme1n1", "/dev/nvme1"),
        ("2", "/dev/nvme2n1", "/dev/nvme2"),
    ]
    assert drives[0]["serial"] == "1951B3444502"
    assert drives[0]["firmware"] == "11170101"
    assert drives[0]["erase_methods"] == [
        erase.SANITIZE_CRYPTO,
        erase.SANITIZE_BLOCK,
        erase.FORMAT_CRYPTO,
        erase.FORMAT_USER_DATA,
    ]
    assert erase.FORMAT_CRYPTO not in drives[2]["erase_methods"]


def test_opal_psid_revert_is_offered_only_with_the_drives_psid(tmp_path):
    scan = Completed(0, sample("sedutil-scan-opal2.txt"))
    hw, _ = _node(tmp_path, {("sedutil-cli", "--scan"): scan})
    drives = asyncio.run(hw.inventory())["drives"]
    assert drives[0]["opal"] is True
    assert erase.OPAL_PSID_REVERT not in drives[0]["erase_methods"]
    hw.psids = {"1951B3444502": "PSID0123456789ABCDEF0123456789AB"}
    drives = asyncio.run(hw.inventory())["drives"]
    assert drives[0]["erase_methods"][3] == erase.OPAL_PSID_REVERT


def test_a_node_without_nvidia_smi_has_no_gpus(tmp_path):
    hw, tools = _node(tmp_path)
    assert asyncio.run(hw.inventory())["gpus"] == []
    assert any(c[0] == "nvidia-smi" for c in tools.calls)


def test_a_bluefield_is_a_dpu_and_a_connectx_a_nic(tmp_path):
    hw, _ = _node(
        tmp_path,
        {
            ("mlxfwmanager", "--query"): Completed(
                0, sample("mlxfwmanager-query-bluefield2-dell.txt")
            )
        },
    )
    inventory = asyncio.run(hw.inventory())
    assert inventory["nics"] == []
    [dpu] = inventory["dpus"]
    assert (dpu["psid"], dpu["firmware"], dpu["model"]) == (
        "DEL0000000033",
        "24.36.7506",
        "0JNDCM_Dx",
    )
    hw, _ = _node(
        tmp_path / "cx6",
        {("mlxfwmanager", "--query"): Completed(0, sample("mlxup-query-connectx6lx.txt"))},
    )
    inventory = asyncio.run(hw.inventory())
    assert inventory["dpus"] == []
    assert [n["psid"] for n in inventory["nics"]] == ["MT_0000000575"]


def test_without_mft_a_bluefield_is_still_found_by_its_pci_ids(tmp_path):
    hw, _ = _node(
        tmp_path,
        {("lspci", "-Dnn"): Completed(0, sample("lspci-nn-mellanox-connectx5-bluefield2.txt"))},
    )
    [dpu] = asyncio.run(hw.inventory())["dpus"]
    assert dpu["name"] == "0000:81:00.0"
    assert dpu["model"] == "BlueField-2 integrated ConnectX-6 Dx"
    assert dpu["firmware"] == ""  # unknown without mlxfwmanager: dpu_firmware sees a drift


def test_no_environment_variable_names_the_installed_image(tmp_path, monkeypatch):
    monkeypatch.setenv("GREENLIGHT_OS_IMAGE_SHA256", "f" * 64)
    hw, _ = _node(tmp_path)
    assert asyncio.run(hw.inventory())["os_image"] == {"sha256": ""}


def test_a_drive_sedutil_finds_without_opal_gets_no_psid_revert(tmp_path):
    hw, _ = _node(
        tmp_path, {("sedutil-cli", "--scan"): Completed(0, sample("sedutil-scan-no-opal.txt"))}
    )
    hw.psids = {"1951B3444502": "PSID0123456789ABCDEF0123456789AB"}
    drives = asyncio.run(hw.inventory())["drives"]
    assert drives[0]["opal"] is False
    assert erase.OPAL_PSID_REVERT not in drives[0]["erase_methods"]


def test_a_qemu_node_inventoried_from_its_own_tools_output(tmp_path):
    # Every answer captured in a QEMU 7.2 guest (nvme-cli 2.3, dmidecode 3.4, iproute2) with
    # -smbios serial HW-VM-0001, an NVMe with serial SN-HW-0001 and a virtio NIC.
    answers = {
        ("dmidecode", "-t", "1"): Completed(0, sample("qemu72-dmidecode-t1.txt")),
        ("ip", "-d", "-j", "link"): Completed(0, sample("qemu72-ip-d-j-link.json")),
        ("lspci", "-Dnn"): Completed(0, sample("qemu72-lspci-Dnn.txt")),
        ("nvme", "list"): Completed(0, sample("qemu72-nvme-list.nvmecli2.json")),
        ("nvme", "id-ctrl", "/dev/nvme0"): Completed(
            0, sample("qemu72-nvme-id-ctrl.nvmecli2.json")
        ),
    }
    (tmp_path / "sys/block").mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    hw = SystemHardware(
        capture=RecordedTools(answers).capture, sys_root=tmp_path / "sys", dev_root=tmp_path / "dev"
    )
    assert asyncio.run(hw.identity()) == {"serial": "HW-VM-0001", "macs": ["52:54:00:12:34:56"]}
    inventory = asyncio.run(hw.inventory())
    [drive] = inventory["drives"]
    assert (drive["serial"], drive["model"], drive["firmware"]) == (
        "SN-HW-0001",
        "QEMU NVMe Ctrl",
        "7.2.22",
    )
    assert drive["erase_methods"] == [erase.FORMAT_USER_DATA]
    assert (inventory["gpus"], inventory["nics"], inventory["dpus"]) == ([], [], [])


def test_without_iproute2_the_ports_come_from_sysfs(tmp_path):
    hw, _ = _node(
        tmp_path, {("ip", "-d", "-j", "link"): Completed(127, "", "ip: command not found")}
    )
    port = tmp_path / "sys/class/net/eno1"
    (tmp_path / "sys/devices/pci0000:00/0000:00:03.0").mkdir(parents=True)
    port.mkdir(parents=True)
    (port / "address").write_text("3c:ec:ef:00:11:22\n")
    (port / "device").symlink_to(tmp_path / "sys/devices/pci0000:00/0000:00:03.0")
    (tmp_path / "sys/class/net/lo").mkdir()
    (tmp_path / "sys/class/net/lo/address").write_text("00:00:00:00:00:00\n")
    assert asyncio.run(hw.identity())["macs"] == ["3c:ec:ef:00:11:22"]
