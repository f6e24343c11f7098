"""Redfish documents a lab BMC serves, rendered from its node's state in its vendor's flavour."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..node import LabNode
from .flavours import Flavour

ROOT = "/redfish/v1"
RESET_TYPES = ["On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart", "Nmi"]
BOOT_TARGETS = ["None", "Pxe", "Hdd", "Cd", "Usb", "BiosSetup", "UefiHttp"]
# A Dell component code per firmware kind, as in iDRAC's "Installed-<code>-<version>" ids.
DELL_CODES = {"bmc": "25227", "bios": "159", "hgx": "108255", "nic": "106003", "dpu": "107001"}


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
        self.reset = f"{self.system}/Actions/ComputerSystem.Reset"

    def link(self, path: str) -> dict[str, str]:
        return {"@odata.id": self.f.link(path)}


@dataclass(frozen=True)
class FirmwareEntry:
    """One FirmwareInventory member of a lab node."""

    id: str
    component: str
    name: str
    version: str


def firmware_entries(node: LabNode, flavour: Flavour) -> list[FirmwareEntry]:
    """The node's firmware inventory in the flavour's id scheme."""
    slots: list[tuple[str, str, int | None]] = [("bmc", "", None), ("bios", "", None)]
    slots.append(("hgx", "", None))
    slots += [
        ("nic", f" {i}", i) for i, _ in enumerate(n for n in node.nics if n["kind"] == "fabric")
    ]
    slots += [("dpu", f" {i}", i) for i in range(len(node.dpus))]
    slots += [("nvme", f" {i}", i) for i in range(len(node.drives))]
    entries = []
    for number, (component, suffix, index) in enumerate(slots, start=1):
        version = node.firmware[component]
        name = flavour.firmware_names[component] + suffix
        if flavour.name == "dell":
            code = DELL_CODES.get(component, "104" + component.upper())
            entry_id = f"Installed-{code}{'' if index is None else f'.{index}'}-{version}"
        elif flavour.name == "hpe":
            entry_id = str(number)
        else:
            entry_id = component.upper() + ("" if index is None else str(index))
        entries.append(FirmwareEntry(entry_id, component, name, version))
    if flavour.name == "dell" and "bmc" in node.firmware_previous:
        # iDRAC keeps the rollback image listed beside the installed one.
        old = node.firmware_previous["bmc"]
        entries.append(
            FirmwareEntry(f"Previous-25227-{old}", "bmc", flavour.firmware_names["bmc"], old)
        )
    return entries


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
        "Boot": {
            "BootSourceOverrideTarget": node.boot_target,
            "BootSourceOverrideEnabled": node.boot_enabled,
            "BootSourceOverrideMode": node.boot_mode,
            "BootSourceOverrideTarget@Redfish.AllowableValues": BOOT_TARGETS,
        },
        "Bios": paths.link(paths.bios),
        "EthernetInterfaces": paths.link(paths.eth),
        "Links": {
            "ManagedBy": [paths.link(paths.manager)],
            "Chassis": [paths.link(paths.chassis)],
        },
        "Actions": {
            "#ComputerSystem.Reset": {
                "target": f.link(paths.reset),
                "ResetType@Redfish.AllowableValues": RESET_TYPES,
            }
        },
        "Status": {"State": "Enabled", "Health": "OK"},
    }


def manager(paths: Paths, node: LabNode) -> dict[str, Any]:
    return {
        "@odata.id": paths.f.link(paths.manager),
        "@odata.type": "#Manager.v1_15_0.Manager",
        "Id": paths.f.manager_id,
        "Name": "Manager",
        "ManagerType": "BMC",
        "Model": paths.f.manager_model,
        "FirmwareVersion": node.firmware["bmc"],
        "Links": {"ManagerForServers": [paths.link(paths.system)]},
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


def update_service(paths: Paths) -> dict[str, Any]:
    body: dict[str, Any] = {
        "@odata.id": paths.f.link(paths.update),
        "@odata.type": "#UpdateService.v1_11_0.UpdateService",
        "Id": "UpdateService",
        "Name": "Update Service",
        "ServiceEnabled": True,
        "FirmwareInventory": paths.link(paths.inventory),
        "Actions": {},
    }
    if paths.f.simple_update:
        body["Actions"]["#UpdateService.SimpleUpdate"] = {
            "target": paths.f.link(paths.simple_update),
            "TransferProtocol@Redfish.AllowableValues": ["HTTP", "HTTPS"],
        }
    if paths.f.multipart_path:
        body["MultipartHttpPushUri"] = paths.f.multipart_path
    return body


def firmware_item(paths: Paths, entry: FirmwareEntry) -> dict[str, Any]:
    return {
        "@odata.id": paths.f.link(f"{paths.inventory}/{entry.id}"),
        "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory",
        "Id": entry.id,
        "Name": entry.name,
        "Version": entry.version,
        "Updateable": not entry.id.startswith("Previous-"),
        "Status": {"State": "Enabled", "Health": "OK"},
    }


def task(paths: Paths, lab_task: Any) -> dict[str, Any]:
    return {
        "@odata.id": paths.f.link(f"{paths.tasks}/{lab_task.id}"),
        "@odata.type": "#Task.v1_7_0.Task",
        "Id": lab_task.id,
        "Name": f"{lab_task.kind} {lab_task.component}".strip(),
        "TaskState": lab_task.state,
        "TaskStatus": "Critical" if lab_task.state == "Exception" else "OK",
        "PercentComplete": lab_task.percent,
        "Messages": [{"Message": lab_task.message}] if lab_task.message else [],
    }
