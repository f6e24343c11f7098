"""The host is chosen by what it is; the manager by ManagerForServers; identity from the chassis."""

from __future__ import annotations

import pytest

from lab.hall import LabHall
from provisioning.redfish import topology

from .conftest import lab_client

BASEBOARD = {"Id": "HGX_Baseboard_0", "SystemType": "Physical", "Processors": {}}
GH200_BASEBOARD = {**BASEBOARD, "Boot": {"BootSourceOverrideTarget@Redfish.AllowableValues": []}}
HOST = {"Id": "DGX", "SystemType": "Physical", "Bios": {}, "Boot": {"BootOrder": []}}


@pytest.mark.parametrize("baseboard", [BASEBOARD, GH200_BASEBOARD])
def test_the_host_wins_over_a_baseboard_listed_first(baseboard):
    systems = [("/Systems/HGX_Baseboard_0", baseboard), ("/Systems/DGX", HOST)]
    assert topology.choose_host(systems) == "/Systems/DGX"
    assert topology.choose_host(list(reversed(systems))) == "/Systems/DGX"


def test_a_dpu_system_is_no_host_but_is_chosen_when_alone():
    dpu = {"Id": "Bluefield", "SystemType": "DPU", "Bios": {}}
    assert not topology.is_host(dpu)
    assert topology.choose_host([("/Systems/Bluefield", dpu)]) == "/Systems/Bluefield"


def test_manager_for_servers_beats_list_order():
    node = "/redfish/v1/Systems/Node1"
    managers = [
        ("/redfish/v1/Managers/MCU0", {"Links": {}}),
        ("/redfish/v1/Managers/BMC", {"Links": {"ManagerForServers": [
            {"@odata.id": "/redfish/v1/Systems/Node0"}, {"@odata.id": node + "/"}]}}),
    ]  # fmt: skip
    assert topology.manager_for(node, {"Links": {}}, managers) == "/redfish/v1/Managers/BMC"


def test_identity_falls_back_to_the_chassis_field_by_field():
    system = {"Manufacturer": "", "Model": None, "SerialNumber": " S1 "}
    chassis = {"Manufacturer": "NVIDIA", "Model": "GB200 NVL", "SerialNumber": "C1"}
    assert topology.identity(system, chassis) == {
        "Manufacturer": "NVIDIA", "Model": "GB200 NVL", "SerialNumber": "S1"}  # fmt: skip


def test_the_dgx_lab_bmc_lists_its_baseboard_first_and_the_host_is_read():
    with LabHall(1, flavours=("dgx",), speed=0, seed=3) as hall:
        bmc = hall.bmc(0)
        with lab_client(bmc) as client:
            ids = [body["Id"] for _, body in client.systems()]
            info = client.system_info()
            manager = client.manager_info()
            gpus = [i for i in client.firmware_inventory() if i.part == "gpu"]
    assert ids == ["HGX_Baseboard_0", "DGX"]
    assert (info.id, info.serial, manager["id"]) == ("DGX", bmc.node.serial, "BMC")
    assert all(gpu.kind == "hgx" for gpu in gpus) and len(gpus) == 8
