"""Firmware: inventory, updates by SimpleUpdate or multipart push, and task monitors."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, BinaryIO

from . import classify, errors, topology
from .models import FirmwareItem, Staged, TaskState, TaskStatus
from .topology import same_path

if TYPE_CHECKING:
    from .client import RedfishClient

RUNNING_STATES = {"new", "starting", "running", "pending", "suspended", "service", "stopping"}
FAILED_STATES = {"exception", "killed", "cancelled", "interrupted", "cancelling"}


def update_service(client: RedfishClient) -> tuple[str, dict[str, Any]]:
    """The UpdateService path and body."""
    path = client.link(client.root(), "UpdateService", url="/redfish/v1/")
    return path, client.get(path)


def entries(client: RedfishClient) -> list[FirmwareItem]:
    """Every FirmwareInventory member, placed (kind, part, model) and marked running or not."""
    path, service = update_service(client)
    if "FirmwareInventory" not in service:
        raise errors.ActionNotSupported(
            client.transport.absolute(path), "this BMC offers no firmware inventory"
        )
    collection = client.link(service, "FirmwareInventory", url=path)
    manager = client.manager_path()
    topo = classify.Topology(
        system_path=client.system_path(),
        node_managers=[manager],
        other_managers=[p for p, _ in client.managers() if not same_path(p, manager)],
        chassis_path=client.chassis_path() or "",
    )
    read = client.related_cache

    def fetch(link: str) -> dict[str, Any] | None:
        # Several entries link the same device (Lenovo: three per adapter): read it once.
        if link not in read:
            try:
                read[link] = client.get(link)
            except errors.RedfishError:
                read[link] = None
        return read[link]

    others = [
        str(body.get("Id") or "")
        for path, body in client.systems()
        if not same_path(path, topo.system_path) and topology.is_host(body)
    ]
    items = [
        classify.entry(member, body, topo, fetch)
        for member, body in client.expanded_members(collection)
        if not _of_another_node(str(body.get("Id") or ""), others)
    ]
    return classify.drop_twins(items)


def _of_another_node(entry_id: str, others: list[str]) -> bool:
    """Whether an entry belongs to another node of a multi-node BMC: HPE Cray EX235n names each
    node's entries "<system id>.<part>" (Node0.BIOS, Node1.BIOS) in one inventory."""
    return any(other and entry_id.startswith(f"{other}.") for other in others)


def inventory(client: RedfishClient) -> list[FirmwareItem]:
    """The firmware that runs now, per component: backup, staging, pending, golden and previous
    copies are left out (firmware.entries has them)."""
    return [item for item in entries(client) if item.running]


def update(
    client: RedfishClient,
    *,
    image_uri: str | None,
    image: bytes | BinaryIO | None,
    filename: str,
    targets: list[str] | None,
) -> Staged:
    """Start an update the way the BMC offers: SimpleUpdate pulls a URI, multipart pushes bytes."""
    path, service = update_service(client)
    url = client.transport.absolute(path)
    simple = (service.get("Actions") or {}).get("#UpdateService.SimpleUpdate")
    multipart = service.get("MultipartHttpPushUri")
    if image_uri and simple and simple.get("target"):
        body: dict[str, Any] = {"ImageURI": image_uri}
        if targets:
            body["Targets"] = targets
        answer = client.transport.request("POST", simple["target"], json=body)
        action = "firmware:simple_update"
    elif image is not None and multipart:
        parameters = {"Targets": targets or [], "@Redfish.OperationApplyTime": "Immediate"}
        files = {
            "UpdateParameters": (None, json.dumps(parameters), "application/json"),
            "UpdateFile": (filename, image, "application/octet-stream"),
        }
        answer = client.transport.request("POST", multipart, files=files)
        action = "firmware:multipart_push"
    else:
        offered = [
            name
            for name, present in (("SimpleUpdate", simple), ("multipart push", multipart))
            if present
        ]
        wanted = "an image URI" if image_uri else "an image file"
        raise errors.ActionNotSupported(
            url,
            f"cannot update from {wanted}: this BMC offers {', '.join(offered) or 'neither'}"
            " of SimpleUpdate and multipart push",
        )
    monitor = answer.location or (answer.body or {}).get("@odata.id")
    return Staged(
        action=action,
        url=answer.url,
        status=answer.status,
        task_monitor=monitor if answer.status in (200, 201, 202) else None,
        detail=answer.body or {},
    )


def task_members(client: RedfishClient) -> list[str]:
    """The tasks the BMC's TaskService lists now; empty when it offers no TaskService."""
    root = client.root()
    try:
        service_path = client.link(root, "TaskService", url="/redfish/v1/")
        service = client.get(service_path)
        return client.members(client.link(service, "Tasks", url=service_path))
    except (errors.ResourceMissing, errors.ActionNotSupported):
        return []


def task_status(client: RedfishClient, monitor: str) -> TaskStatus:
    """One look at a task: 202 means still running; a Task body's TaskState says the rest."""
    client.open()
    answer = client.transport.request("GET", monitor)
    body = answer.body or {}
    raw = str(body.get("TaskState") or "")
    percent = body.get("PercentComplete")
    messages = tuple(
        str(m.get("Message") or m.get("MessageId") or "")
        for m in body.get("Messages") or []
        if isinstance(m, dict)
    )
    if answer.status == 202 or raw.lower() in RUNNING_STATES:
        state = TaskState.RUNNING
    elif raw.lower() in FAILED_STATES or str(body.get("TaskStatus", "")).lower() == "critical":
        state = TaskState.FAILED
    else:
        state = TaskState.COMPLETED
    return TaskStatus(
        state=state,
        raw_state=raw or str(answer.status),
        percent=percent if isinstance(percent, int) else None,
        messages=messages,
    )
