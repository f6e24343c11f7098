"""The firmware, update and task documents of a lab BMC: its FirmwareInventory in each vendor's
id scheme, the UpdateService (with iLO's flash state), iDRAC's DellJobService, and Tasks (with
iDRAC's DellJob view of them).

The manager's and chassis' own firmware actions stay with those documents in resources.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..node import LabNode
from .flavours import Flavour
from .resources import Paths, adapter_id

# A Dell component code per firmware kind, as in iDRAC's "Installed-<code>-<version>" ids.
DELL_CODES = {"bmc": "25227", "bios": "159", "hgx": "108255", "nic": "106003", "dpu": "107001"}


@dataclass(frozen=True)
class FirmwareEntry:
    """One FirmwareInventory member of a lab node; `related` is its RelatedItem path ("")."""

    id: str
    component: str
    name: str
    version: str
    related: str = ""
    running: bool = True


def firmware_id(flavour: Flavour, component: str, index: int | None, version: str) -> str:
    """A component's inventory id as its vendor spells it.

    Dell iDRAC 9: "Installed-<code>-<version>__<FQDD>"; Supermicro X13 and the HGX tray's HMC
    (through any host BMC): "BMC", "BIOS", "HGX_FW_BMC_0", "NIC1"; HPE iLO 5: a number.
    """
    if component in flavour.inventory_ids:
        return flavour.inventory_ids[component]
    if component == "hgx":
        return "HGX_FW_BMC_0"
    if flavour.name == "dell":
        fqdd = {
            "bmc": "iDRAC.Embedded.1-1",
            "bios": "BIOS.Setup.1-1",
            "nic": f"NIC.Slot.{(index or 0) + 1}-1",
            "dpu": f"NIC.Slot.{(index or 0) + 11}-1",
            "nvme": f"Disk.Bay.{index}:Enclosure.Internal.0-1",
        }[component]
        code = DELL_CODES.get(component, "0")
        return f"Installed-{code}-{version}__{fqdd}"
    suffix = "" if index is None else str(index + 1)
    return {"bmc": "BMC", "bios": "BIOS"}.get(component, f"{component.upper()}{suffix}")


def firmware_entries(node: LabNode, flavour: Flavour) -> list[FirmwareEntry]:
    """The node's firmware inventory in the flavour's id scheme."""
    paths = Paths(flavour)
    fabric = [n for n in node.nics if n["kind"] == "fabric"]
    slots: list[tuple[str, int | None, str]] = [
        ("bmc", None, paths.manager),
        ("bios", None, paths.bios),
        ("hgx", None, ""),
    ]
    if flavour.lists_device_firmware:
        slots += [
            ("nic", i, f"{paths.adapters}/{adapter_id('nic', i)}") for i in range(len(fabric))
        ]
        slots += [
            ("dpu", i, f"{paths.adapters}/{adapter_id('dpu', i)}") for i in range(len(node.dpus))
        ]
        slots += [("nvme", i, f"{paths.drives}/{i}") for i in range(len(node.drives))]
    entries = []
    for number, (component, index, related) in enumerate(slots, start=1):
        version = node.firmware[component]
        if component == "bios":
            version = flavour.bios_inventory_version.format(v=version)
        name = flavour.firmware_names[component] + ("" if index is None else f" {index}")
        if flavour.name == "hpe":
            entry_id = str(number)
        else:
            entry_id = firmware_id(flavour, component, index, version)
        entries.append(FirmwareEntry(entry_id, component, name, version, related))
    for component, old in node.firmware_previous.items():
        # iDRAC keeps the rollback image listed beside the installed one ("Previous-").
        if flavour.name == "dell" and component == "bmc":
            entry_id = "Previous-" + firmware_id(flavour, "bmc", None, old).split("-", 1)[1]
            entries.append(FirmwareEntry(entry_id, "", flavour.firmware_names["bmc"], old,
                                         paths.manager, running=False))  # fmt: skip
    if flavour.name == "supermicro":
        # X13 lists a backup copy of BMC and BIOS: the version before the last update, else
        # "Not Present" (as in the capture); the id alone says it does not run.
        for component, related in (("bmc", paths.manager), ("bios", paths.bios)):
            old = node.firmware_previous.get(component)
            if old and component == "bios":
                old = flavour.bios_inventory_version.format(v=old)
            entries.append(FirmwareEntry(f"Backup_{component.upper()}", "",
                                         f"{component.upper()} Backup", old or "Not Present",
                                         related, running=False))  # fmt: skip
    for entry_id, name, version, *related in flavour.extra_firmware:
        link = {"manager": paths.manager, "bios": paths.bios}.get(related[0] if related else "", "")
        entries.append(FirmwareEntry(entry_id, "", name, version, link))
    return entries


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
    body: dict[str, Any] = {
        "@odata.id": paths.f.link(f"{paths.inventory}/{entry.id}"),
        "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory",
        "Id": entry.id,
        "Name": entry.name,
        "Version": entry.version,
        "Updateable": entry.running,
        # Supermicro X13 lists its backup copies as Enabled too: only the id says they do not run.
        "Status": {"State": "Enabled" if entry.running or paths.f.name == "supermicro"
                   else "StandbySpare", "Health": "OK"},
    }  # fmt: skip
    if entry.related:
        body["RelatedItem"] = [paths.link(entry.related)]
    return body


def dell_job_service(paths: Paths) -> dict[str, Any]:
    """sushy tests/oem/dell/unit/json_samples/job_service.json, at iDRAC 9 6.x's path."""
    return {
        "@odata.id": paths.f.link(paths.dell_job_service),
        "@odata.type": "#DellJobService.v1_1_0.DellJobService",
        "Id": "Job Service",
        "Name": "DellJobService",
        "Actions": {
            "#DellJobService.DeleteJobQueue": {"target": paths.f.link(paths.delete_job_queue)}
        },
    }


def hpe_update_state(flash: Any) -> dict[str, Any]:
    """UpdateService.Oem.Hpe as iLO 5/6 report a flash (HPE iLO RESTful API reference)."""
    if flash is None:
        return {"State": "Idle", "FlashProgressPercent": 0}
    return {
        "State": flash.state,
        "FlashProgressPercent": flash.percent,
        "ImageName": f"{flash.component}-{flash.version}.bin",
        "Target": flash.component,
    }


# A lab task's state as a DMTF TaskState and as an iDRAC JobState. A Scheduled iDRAC job is a
# Task "Starting" (sushy tests/oem/dell/unit/json_samples/task.json).
TASK_STATES = {"Scheduled": "Starting"}
DELL_JOB_STATES = {"Exception": "Failed", "Cancelled": "Failed"}


def task(paths: Paths, lab_task: Any) -> dict[str, Any]:
    body = {
        "@odata.id": paths.f.link(f"{paths.tasks}/{lab_task.id}"),
        "@odata.type": "#Task.v1_7_0.Task",
        "Id": lab_task.id,
        "Name": f"{lab_task.kind} {lab_task.component}".strip(),
        "TaskState": TASK_STATES.get(lab_task.state, lab_task.state),
        "TaskStatus": "Critical" if lab_task.state == "Exception" else "OK",
        "PercentComplete": lab_task.percent,
        "Messages": [{"Message": lab_task.message}] if lab_task.message else [],
    }
    if paths.f.update_progress == "openbmc":
        body["TaskMonitor"] = paths.f.link(f"{paths.tasks}/{lab_task.id}/Monitor")
    if lab_task.id.startswith("JID_"):
        body["Oem"] = {
            "Dell": {
                "@odata.type": "#DellJob.v1_1_0.DellJob",
                "Id": lab_task.id,
                "JobState": DELL_JOB_STATES.get(lab_task.state, lab_task.state),
                "Message": lab_task.message,
                "PercentComplete": lab_task.percent,
            }
        }
    return body
