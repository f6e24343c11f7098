"""The tool readers, fed output recorded from real machines (samples/README.md)."""

from __future__ import annotations

import pytest

from agent import erase
from agent import inventory_sources as src

from .recorded import sample


def test_nvme_cli_1x_list_reads_every_namespace():
    namespaces = src.nvme_namespaces(sample("nvme-list-micron-samsung.nvmecli1.json"))
    assert [n["path"] for n in namespaces] == ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1"]
    assert namespaces[0]["serial"] == "21062E6B8061"  # nvme-cli 1.x pads serials with spaces
    assert namespaces[1] == {
        "path": "/dev/nvme1n1",
        "serial": "S5X9NG0T116005",
        "model": "MZOL23T8HCLS-00AFB",
        "firmware": "GDA82F2Q",
        "size_bytes": 3760740458496,
    }


def test_nvme_cli_2x_list_reads_its_layout():
    [namespace] = src.nvme_namespaces(sample("nvme-list-vastdata.nvmecli2.json"))
    assert namespace["path"] == "/dev/nvme1n1"
    assert namespace["size_bytes"] == 10737418240


def test_nvme_cli_2x_verbose_list_nests_namespaces_under_controllers():
    # Captured in a QEMU 7.2 guest with nvme-cli 2.3.
    [namespace] = src.nvme_namespaces(sample("qemu72-nvme-list-v.nvmecli2.json"))
    assert namespace == {
        "path": "/dev/nvme0n1",
        "serial": "SN-HW-0001",
        "model": "QEMU NVMe Ctrl",
        "firmware": "7.2.22",
        "size_bytes": 536870912,
    }
    assert src.nvme_namespaces(sample("qemu72-nvme-list.nvmecli2.json")) == [namespace]


def test_qemus_nvme_offers_a_user_data_format_and_nothing_stronger():
    ctrl = src.nvme_controller(sample("qemu72-nvme-id-ctrl.nvmecli2.json"))
    assert (ctrl["sanicap"], ctrl["fna"], ctrl["oacs"]) == (0, 0, 0x10A)
    assert erase.nvme_erase_methods(ctrl["sanicap"], ctrl["fna"], ctrl["oacs"]) == [
        erase.FORMAT_USER_DATA
    ]


def test_id_ctrl_of_both_nvme_cli_layouts_gives_the_erase_bits():
    wdc = src.nvme_controller(sample("nvme-id-ctrl-wdc-sn730.nvmecli1.json"))
    solidigm = src.nvme_controller(sample("nvme-id-ctrl-solidigm-d5p5336.nvmecli2.json"))
    assert wdc["serial"] == "1951B3444502"
    assert wdc["model"] == "WDC PC SN730 SDBQNTY-256G-1001"
    assert (wdc["sanicap"], wdc["fna"], wdc["oacs"]) == (0x60000003, 4, 0x17)
    assert (solidigm["sanicap"], solidigm["fna"], solidigm["oacs"]) == (0x60000003, 4, 94)


@pytest.mark.parametrize(
    ("name", "methods"),
    [
        (
            "nvme-id-ctrl-wdc-sn730.nvmecli1.json",
            [
                erase.SANITIZE_CRYPTO,
                erase.SANITIZE_BLOCK,
                erase.FORMAT_CRYPTO,
                erase.FORMAT_USER_DATA,
            ],
        ),
        (
            "nvme-id-ctrl-solidigm-d5p5336.nvmecli2.json",
            [
                erase.SANITIZE_CRYPTO,
                erase.SANITIZE_BLOCK,
                erase.FORMAT_CRYPTO,
                erase.FORMAT_USER_DATA,
            ],
        ),
        (
            "nvme-id-ctrl-wdc-sn730-fna0.nvmecli1.json",
            [erase.SANITIZE_CRYPTO, erase.SANITIZE_BLOCK, erase.FORMAT_USER_DATA],
        ),
    ],
)
def test_a_drive_reports_the_erase_methods_its_controller_offers(name, methods):
    ctrl = src.nvme_controller(sample(name))
    assert erase.nvme_erase_methods(ctrl["sanicap"], ctrl["fna"], ctrl["oacs"]) == methods


def test_dmidecode_system_record():
    assert src.dmi_system(sample("dmidecode-t1-asrock-e3c246d4i.txt")) == {
        "serial": "D5S0R8000105",
        "product": "c3.small.x86",
        "manufacturer": "Packet",
    }


def test_lspci_tells_a_bluefield_from_a_connectx():
    devices = src.pci_devices(sample("lspci-nn-mellanox-connectx5-bluefield2.txt"))
    assert [d["slot"] for d in devices][:2] == ["0000:63:00.0", "0000:63:00.1"]
    assert {d["slot"] for d in src.bluefield_functions(devices)} == {
        "0000:81:00.0",
        "0000:81:00.1",
        "0000:81:00.2",
    }


def test_lspci_of_a_virtual_machine_has_no_mellanox_device():
    devices = src.pci_devices(sample("lspci-nn-this-machine-virtio.txt"))
    assert any(d["vendor"] == "1af4" for d in devices)
    assert src.bluefield_functions(devices) == []


def test_mlxfwmanager_query_blocks():
    [dpu] = src.mellanox_devices(sample("mlxfwmanager-query-bluefield2-dell.txt"))
    assert dpu["type"] == "BlueField2"
    assert dpu["psid"] == "DEL0000000033"
    assert dpu["firmware"] == "24.36.7506"
    assert dpu["pci"] == "/dev/mst/mt41686_pciconf0"
    assert src.is_bluefield(dpu)
    [nic] = src.mellanox_devices(sample("mlxup-query-connectx6lx.txt"))
    assert (nic["psid"], nic["firmware"], nic["pci"]) == (
        "MT_0000000575",
        "26.33.1048",
        "0002:01:00.0",
    )
    assert not src.is_bluefield(nic)


def test_ip_link_keeps_physical_ports_only():
    ports = src.physical_links(sample("ip-d-j-link-this-machine.json"))
    # lo and the two ifb devices have no parent bus; eth0 is a virtio NIC.
    assert ports == [
        {"name": "eth0", "mac": "02:fc:00:00:00:01", "bus": "virtio", "pci": "virtio2"}
    ]


def test_nvidia_smi_bus_ids_in_the_kernels_form():
    gpus = src.nvidia_gpus(
        sample("nvidia-smi-query-index-uuid-busid-serial.csv"),
        ("index", "uuid", "pci.bus_id", "serial"),
    )
    assert [g["pci.bus_id"] for g in gpus] == [
        "0000:18:00.0",
        "0000:3b:00.0",
        "0000:86:00.0",
        "0000:af:00.0",
    ]
    assert gpus[3]["serial"] == "0423718081271"


def test_unreadable_output_is_an_error_naming_the_tool():
    with pytest.raises(src.SourceError, match="nvme id-ctrl"):
        src.nvme_controller("Failed to open /dev/nvme0")
