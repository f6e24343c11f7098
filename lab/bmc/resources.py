"""Redfish documents a lab BMC serves, rendered from its node's state in its vendor's flavour."""

from __future__ import annotations

from typing import Any

from ..node import LabNode
from .flavours import Flavour
from .member_flavours import SWITCH_TRAY_RESET_TYPES

ROOT = "/redfish/v1"
RESET_TYPES = ["On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart", "Nmi"]
BOOT_TARGETS = ["None", "Pxe", "Hdd", "Cd", "Usb", "BiosSetup", "UefiHttp"]


class Paths:
    """Canonical paths of one BMC's resources (as the flavour spells them in links)."""

    def __init__(self, flavour: Flavour) -> None:
        self.f = flavour
        self.system = f"{ROOT}/Systems/{flavour.system_id}"
        self.manager = f"{ROOT}/Managers/{flavour.manager_id}"
        self.chassis = f"{ROOT}/Chassis/{flavour.chassis_id}"
        self.bios = f"{self.system}/Bios"
        self.settings = f"{self.bios}/{flavour.bios_settings}"
        self.eth = f"{self.system}/EthernetInterfaces"
        self.update = f"{ROOT}/UpdateService"
        self.inventory = f"{self.update}/FirmwareInventory"
        self.simple_update = f"{self.update}/Actions/UpdateService.SimpleUpdate"
        self.tasks = f"{ROOT}/TaskService/Tasks"
        self.sessions = f"{ROOT}/SessionService/Sessions"
        self.manager_reset = f"{self.manager}/Actions/Manager.Reset"
        # iDRAC 9 6.x: the manager's Links.Oem.Dell.DellJobService (dell-idrac9-r750).
        self.dell_job_service = f"{self.manager}/Oem/Dell/DellJobService"
        self.delete_job_queue = f"{self.dell_job_service}/Actions/DellJobService.DeleteJobQueue"
        # GB200 NVL: Chassis/BMC_0 Actions.Oem (nvidia-gb200).
        self.aux_power_reset = f"{self.chassis}/Actions/Oem/NvidiaChassis.AuxPowerReset"
        self.reset = f"{self.system}/Actions/ComputerSystem.Reset"
        self.processors = f"{self.system}/Processors"
        self.storage = f"{self.system}/Storage"
        self.drives = f"{self.storage}/1/Drives"
        self.adapters = f"{self.chassis}/NetworkAdapters"
        # An NVLink switch tray's fabric (DMTF Fabric, FabricType NVLink).
        self.fabrics = f"{ROOT}/Fabrics"
        # The system's own settings object, where Boot is PATCHed on NVIDIA's BMCs ("" if none).
        self.system_settings = (
            f"{self.system}/{flavour.system_settings}" if flavour.system_settings else ""
        )
        owner = self.system if flavour.media_owner == "system" else self.manager
        self.media = f"{owner}/VirtualMedia"
        self.cd = f"{self.media}/{flavour.media_id}"
        self.baseboard = f"{ROOT}/Systems/HGX_Baseboard_0"
        self.hmc = f"{ROOT}/Managers/HGX_BMC_0"
        # GPUs sit on the HGX baseboard's system where the BMC serves one (DGX H100).
        self.gpu_processors = (
            f"{self.baseboard}/Processors" if flavour.baseboard else self.processors
        )

    def link(self, path: str) -> dict[str, str]:
        return {"@odata.id": self.f.link(path)}


def adapter_id(component: str, index: int) -> str:
    """A network adapter's id: fabric NICs first, then DPUs."""
    return f"{'NIC' if component == 'nic' else 'DPU'}.Slot.{index + 1}"


def service_root(paths: Paths, node: LabNode) -> dict[str, Any]:
    return {
        "@odata.id": paths.f.link(f"{ROOT}/"),
        "@odata.type": "#ServiceRoot.v1_11_0.ServiceRoot",
        "Id": "RootService",
        "Name": "Root Service",
        "RedfishVersion": "1.15.0",
        "UUID": node.uuid,
        "Systems": paths.link(f"{ROOT}/Systems"),
        "Managers": paths.link(f"{ROOT}/Managers"),
        "Chassis": paths.link(f"{ROOT}/Chassis"),
        "UpdateService": paths.link(paths.update),
        "TaskService": paths.link(f"{ROOT}/TaskService"),
        "SessionService": paths.link(f"{ROOT}/SessionService"),
        "Links": {"Sessions": paths.link(paths.sessions)},
    }


def collection(paths: Paths, path: str, members: list[str], name: str) -> dict[str, Any]:
    return {
        "@odata.id": paths.f.link(path),
        "@odata.type": f"#{name}Collection.{name}Collection",
        "Name": f"{name} Collection",
        "Members": [paths.link(m) for m in members],
        "Members@odata.count": len(members),
    }


def system(paths: Paths, node: LabNode) -> dict[str, Any]:
    f = paths.f
    return {
        "@odata.id": f.link(paths.system),
        "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
        "Id": f.system_id,
        "Name": "System",
        "Manufacturer": node.manufacturer,
        "Model": node.model,
        "SerialNumber": node.serial,
        "UUID": node.uuid,
        "PowerState": node.power,
        "BiosVersion": node.firmware["bios"],
        "Boot": boot(f, node, allowable=f.boot_values_on_system),
        "Bios": paths.link(paths.bios),
        "EthernetInterfaces": paths.link(paths.eth),
        "Processors": paths.link(paths.processors),
        "Storage": paths.link(paths.storage),
        "SystemType": "Physical",
        "Links": {
            "ManagedBy": [paths.link(paths.manager)],
            "Chassis": [paths.link(paths.chassis)],
        },
        "Actions": {
            "#ComputerSystem.Reset": {
                "target": f.link(paths.reset),
                "ResetType@Redfish.AllowableValues": reset_types(f),
            }
        },
        "Status": {"State": "Enabled", "Health": "OK"},
        **media_link(paths, "system"),
        **settings_link(paths),
    }


def reset_types(flavour: Flavour) -> list[str]:
    """The ResetType values the flavour's ComputerSystem.Reset takes."""
    if flavour.member == "switch_tray":
        return list(SWITCH_TRAY_RESET_TYPES)
    return RESET_TYPES


def boot(flavour: Flavour, node: LabNode, *, allowable: bool = True) -> dict[str, Any]:
    """The Boot object of the system (or of its settings object), as the flavour lists it."""
    body: dict[str, Any] = {
        "BootSourceOverrideTarget": node.boot_target,
        "BootSourceOverrideEnabled": node.boot_enabled,
        "BootSourceOverrideMode": node.boot_mode,
    }
    if allowable:
        body["BootSourceOverrideTarget@Redfish.AllowableValues"] = list(flavour.boot_targets)
        if flavour.boot_enabled_values:
            body["BootSourceOverrideEnabled@Redfish.AllowableValues"] = list(
                flavour.boot_enabled_values
            )
    return body


def media_link(paths: Paths, owner: str) -> dict[str, Any]:
    """The VirtualMedia link on the system or the manager, where the flavour hangs it."""
    return {"VirtualMedia": paths.link(paths.media)} if paths.f.media_owner == owner else {}


def settings_link(paths: Paths) -> dict[str, Any]:
    """The system's @Redfish.Settings where Boot is taken on a settings object."""
    if not paths.system_settings:
        return {}
    return {
        "@Redfish.Settings": {
            "@odata.type": "#Settings.v1_3_5.Settings",
            "SettingsObject": paths.link(paths.system_settings),
        }
    }


def system_settings(paths: Paths, node: LabNode) -> dict[str, Any]:
    """The system's settings object (DGX "SD", GB200 "Settings"): Boot as it will apply."""
    return {
        "@odata.id": paths.f.link(paths.system_settings),
        "@odata.type": "#ComputerSystem.v1_17_0.ComputerSystem",
        "Id": paths.f.system_settings,
        "Name": "System Pending Settings",
        "Boot": boot(paths.f, node),
    }


def manager(paths: Paths, node: LabNode) -> dict[str, Any]:
    return {
        **media_link(paths, "manager"),
        "@odata.id": paths.f.link(paths.manager),
        "@odata.type": "#Manager.v1_15_0.Manager",
        "Id": paths.f.manager_id,
        "Name": "Manager",
        "ManagerType": "BMC",
        "Model": paths.f.manager_model,
        "FirmwareVersion": node.firmware["bmc"],
        # The DGX H100 host BMC names no server it manages; the host names it (ManagedBy).
        "Links": {
            **({} if paths.f.baseboard else {"ManagerForServers": [paths.link(paths.system)]}),
            **manager_firmware_links(paths),
        },
        **manager_firmware_parts(paths),
    }


def chassis(paths: Paths, node: LabNode) -> dict[str, Any]:
    return {
        "@odata.id": paths.f.link(paths.chassis),
        "@odata.type": "#Chassis.v1_21_0.Chassis",
        "Id": paths.f.chassis_id,
        "Name": "Chassis",
        "ChassisType": "RackMount",
        "Manufacturer": node.manufacturer,
        "Model": node.model,
        "SerialNumber": node.serial,
        "NetworkAdapters": paths.link(paths.adapters),
        **shelf_output(paths, node),
        **chassis_firmware_parts(paths),
        "Links": {"ComputerSystems": [paths.link(paths.system)]},
    }


def nic_id(flavour: Flavour, index: int) -> str:
    return f"NIC.Slot.{index + 1}-1-1" if flavour.name == "dell" else str(index + 1)


def ethernet_interface(paths: Paths, node: LabNode, index: int) -> dict[str, Any]:
    nic = node.nics[index]
    return {
        "@odata.id": paths.f.link(f"{paths.eth}/{nic_id(paths.f, index)}"),
        "@odata.type": "#EthernetInterface.v1_9_0.EthernetInterface",
        "Id": nic_id(paths.f, index),
        "Name": nic["name"],
        "MACAddress": nic["mac"].upper() if paths.f.name == "hpe" else nic["mac"],
        "LinkStatus": "LinkUp" if node.power == "On" else "NoLink",
    }


def bios(paths: Paths, node: LabNode) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "@odata.type": "#Settings.v1_3_5.Settings",
        "SettingsObject": paths.link(paths.settings),
    }
    if paths.f.bios_job:
        settings["SupportedApplyTimes"] = ["OnReset", "AtMaintenanceWindowStart"]
    return {
        "@odata.id": paths.f.link(paths.bios),
        "@odata.type": "#Bios.v1_2_0.Bios",
        "Id": "Bios",
        "Name": "BIOS Configuration Current Settings",
        "AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
        "Attributes": dict(node.bios_current),
        "@Redfish.Settings": settings,
    }


def bios_settings(paths: Paths, node: LabNode) -> dict[str, Any]:
    return {
        "@odata.id": paths.f.link(paths.settings),
        "@odata.type": "#Bios.v1_2_0.Bios",
        "Id": "Settings",
        "Name": "BIOS Configuration Pending Settings",
        "Attributes": dict(node.bios_pending),
    }


# What the lab's parts are, as the vendors' BMCs describe them (Supermicro X13 capture's
# ConnectX-7 part number; NVIDIA GB200 capture's BlueField-3 part number).
NIC_MODEL = ("ConnectX-7", "MCX75310AAS-NEAT")
DPU_MODEL = ("BlueField-3 DPU", "900-9D3B6-00CN-AB0")


def processors(paths: Paths, node: LabNode) -> list[dict[str, Any]]:
    """The host's Processors: two CPUs, and the GPUs unless they sit on a baseboard system."""
    out = cpus(paths)
    if not paths.f.baseboard:
        out += gpus(paths, node)
    return out


def gpus(paths: Paths, node: LabNode) -> list[dict[str, Any]]:
    """The node's GPUs, each a Processor with ProcessorType GPU."""
    return [
        {
            "@odata.id": paths.f.link(f"{paths.gpu_processors}/GPU{gpu['index']}"),
            "@odata.type": "#Processor.v1_18_0.Processor",
            "Id": f"GPU{gpu['index']}",
            "Name": f"GPU {gpu['index']}",
            "ProcessorType": "GPU",
            "Manufacturer": "NVIDIA",
            "Model": gpu["model"],
            "SerialNumber": gpu["serial"],
            "FirmwareVersion": node.firmware["hgx"],
            "Status": {"State": "Enabled", "Health": "OK"},
        }
        for gpu in node.gpus
    ]


def cpus(paths: Paths) -> list[dict[str, Any]]:
    out = [
        {
            "@odata.id": paths.f.link(f"{paths.processors}/CPU{i}"),
            "@odata.type": "#Processor.v1_18_0.Processor",
            "Id": f"CPU{i}",
            "Name": f"CPU {i}",
            "ProcessorType": "CPU",
            "Model": "Intel Xeon Platinum 8480+",
            "Status": {"State": "Enabled", "Health": "OK"},
        }
        for i in range(2)
    ]
    return out


def baseboard(paths: Paths, node: LabNode) -> dict[str, Any]:
    """The HGX baseboard as its HMC serves it: a Physical system that boots nothing."""
    return {
        "@odata.id": paths.f.link(paths.baseboard),
        "@odata.type": "#ComputerSystem.v1_17_0.ComputerSystem",
        "Id": "HGX_Baseboard_0",
        "Name": "HGX_Baseboard_0",
        "Manufacturer": "NVIDIA",
        "SystemType": "Physical",
        "PowerState": node.power,
        "Processors": paths.link(paths.gpu_processors),
        "Links": {"ManagedBy": [paths.link(paths.hmc)]},
        "Status": {"State": "Enabled", "Health": "OK"},
    }


def hmc(paths: Paths, node: LabNode) -> dict[str, Any]:
    """The HGX tray's management controller, manager of the baseboard only."""
    return {
        "@odata.id": paths.f.link(paths.hmc),
        "@odata.type": "#Manager.v1_15_0.Manager",
        "Id": "HGX_BMC_0",
        "Name": "HGX_BMC_0",
        "ManagerType": "BMC",
        "FirmwareVersion": node.firmware["hgx"],
        "Links": {"ManagerForServers": [paths.link(paths.baseboard)]},
    }


def network_adapters(paths: Paths, node: LabNode) -> list[dict[str, Any]]:
    """The fabric NICs and DPUs as NetworkAdapters of the chassis."""
    fabric = [n for n in node.nics if n["kind"] == "fabric"]
    parts = [("nic", i, n["serial"], NIC_MODEL) for i, n in enumerate(fabric)]
    parts += [("dpu", i, d["serial"], DPU_MODEL) for i, d in enumerate(node.dpus)]
    return [
        {
            "@odata.id": paths.f.link(f"{paths.adapters}/{adapter_id(kind, i)}"),
            "@odata.type": "#NetworkAdapter.v1_9_0.NetworkAdapter",
            "Id": adapter_id(kind, i),
            "Name": "Network Adapter",
            "Manufacturer": "NVIDIA",
            "Model": model,
            "PartNumber": part_number,
            "SerialNumber": serial,
            "Status": {"State": "Enabled", "Health": "OK"},
        }
        for kind, i, serial, (model, part_number) in parts
    ]


def storage(paths: Paths, node: LabNode) -> dict[str, Any]:
    """The one storage subsystem, linking the node's NVMe drives."""
    return {
        "@odata.id": paths.f.link(f"{paths.storage}/1"),
        "@odata.type": "#Storage.v1_15_0.Storage",
        "Id": "1",
        "Name": "NVMe Storage",
        "Drives": [paths.link(f"{paths.drives}/{i}") for i in range(len(node.drives))],
    }


def drive(paths: Paths, node: LabNode, index: int) -> dict[str, Any]:
    part = node.drives[index]
    return {
        "@odata.id": paths.f.link(f"{paths.drives}/{index}"),
        "@odata.type": "#Drive.v1_17_0.Drive",
        "Id": str(index),
        "Name": f"NVMe drive {index}",
        "Model": part["model"],
        "SerialNumber": part["serial"],
        "Protocol": "NVMe",
        "MediaType": "SSD",
        "Revision": node.firmware["nvme"],
        "Status": {"State": "Enabled", "Health": "OK"},
    }


def manager_firmware_parts(paths: Paths) -> dict[str, Any]:
    """The manager's Reset action (GracefulRestart, ForceRestart as XCC and iDRAC list them)."""
    return {
        "Actions": {
            "#Manager.Reset": {
                "target": paths.f.link(paths.manager_reset),
                "ResetType@Redfish.AllowableValues": ["GracefulRestart", "ForceRestart"],
            }
        }
    }


def manager_firmware_links(paths: Paths) -> dict[str, Any]:
    """iDRAC: Links.Oem.Dell.DellJobService (dell-idrac9-r750 Managers/iDRAC.Embedded.1)."""
    if paths.f.update_progress != "dell_job":
        return {}
    return {"Oem": {"Dell": {"DellJobService": paths.link(paths.dell_job_service)}}}


def chassis_firmware_parts(paths: Paths) -> dict[str, Any]:
    """GB200 NVL's aux power cycle on Chassis/BMC_0 (nvidia-gb200 Actions.Oem)."""
    if "aux_power" not in (paths.f.bmc_activation, paths.f.host_activation):
        return {}
    action = {"target": paths.f.link(paths.aux_power_reset)}
    return {"Actions": {"Oem": {"#NvidiaChassis.AuxPowerReset": action}}}


def shelf_output(paths: Paths, node: LabNode) -> dict[str, Any]:
    """A power shelf's output on its chassis: On and OK, or Off and Critical once it tripped."""
    if paths.f.member != "power_shelf":
        return {}
    tripped = node.tripped
    return {
        "PowerState": "Off" if tripped else "On",
        "Status": {"State": "Enabled", "Health": "Critical" if tripped else "OK"},
    }


def nvlink_fabrics(paths: Paths, node: LabNode) -> list[dict[str, Any]]:
    """A switch tray's NVLink fabric: Starting while it forms after NVOS boots, Enabled and OK
    once formed, Disabled while the tray is off (lab.rack moves it). A down port does not change
    the fabric's own status: the compute trays' `nvidia-smi nvlink -s` shows it."""
    if paths.f.member != "switch_tray":
        return []
    return [
        {
            "@odata.id": paths.f.link(f"{paths.fabrics}/NVLink_0"),
            "@odata.type": "#Fabric.v1_3_0.Fabric",
            "Id": "NVLink_0",
            "Name": "NVLink Fabric",
            "FabricType": "NVLink",
            "Status": {"State": node.fabric_state or "Disabled", "Health": "OK"},
        }
    ]
