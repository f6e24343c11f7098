"""BIOS attributes: current values from /Bios, changes staged in its @Redfish.Settings object."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors, quirks, update_tracking
from .models import Staged

if TYPE_CHECKING:
    from .client import RedfishClient


def bios_path(client: RedfishClient) -> str:
    """The system's Bios resource; a BMC without one (sushy-tools' fake driver) says so."""
    system = client.system()
    if "Bios" not in system:
        raise errors.ActionNotSupported(
            client.transport.absolute(client.system_path()),
            "this BMC exposes no BIOS resource (no Bios link on the system)",
        )
    return client.link(system, "Bios", url=client.system_path())


def current(client: RedfishClient) -> dict[str, Any]:
    """Attributes in effect now. Only these prove a change was applied."""
    return dict(client.get(bios_path(client)).get("Attributes") or {})


def settings_path(client: RedfishClient) -> tuple[str, dict[str, Any]]:
    """The pending-settings object named by @Redfish.Settings, and that annotation."""
    path = bios_path(client)
    body = client.get(path)
    annotation = body.get("@Redfish.Settings")
    if not isinstance(annotation, dict) or "SettingsObject" not in annotation:
        raise errors.ActionNotSupported(
            client.transport.absolute(path),
            "the Bios resource has no @Redfish.Settings object: BIOS changes cannot be staged",
        )
    target = client.link(annotation, "SettingsObject", url=path)
    return target, annotation


def pending(client: RedfishClient) -> dict[str, Any]:
    """Attributes staged for the next reset."""
    path, _ = settings_path(client)
    return dict(client.get(path).get("Attributes") or {})


def stage(client: RedfishClient, changes: dict[str, Any]) -> Staged:
    """PATCH the changes to the settings object, with If-Match when the BMC gives an ETag."""
    if not changes:
        raise ValueError("no BIOS changes to stage")
    path, annotation = settings_path(client)
    settings = client.get_answer(path)
    body: dict[str, Any] = {"Attributes": dict(changes)}
    body.update(quirks.bios_apply_time(client.manufacturer(), annotation))
    try:
        answer = client.patch(path, body, etag=settings.etag)
    except errors.PendingJob:
        # Dell: a leftover configuration job holds the settings (LC068, RAC0679). Clear the
        # queue, as Ironic's iDRAC clean step does, and stage once more; a second refusal stands.
        if not update_tracking.clear_job_queue(client):
            raise
        answer = client.patch(path, body, etag=client.get_answer(path).etag)
    monitor = answer.location if answer.status == 202 else None
    return Staged(
        action="bios:stage",
        url=answer.url,
        status=answer.status,
        task_monitor=monitor,
        detail={"attributes": dict(changes)},
    )
