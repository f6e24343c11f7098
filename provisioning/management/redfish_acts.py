"""What `redfish_act` does to one BMC: each act the way the pipeline does it, then its read-back.

Each act returns what it saw as JSON-ready data. With read_back=False (a dry run: the client's
transport records writes instead of sending them) an act only builds its requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..redfish import (
    PowerAction,
    PowerState,
    RedfishClient,
    boot,
    errors,
    update_tracking,
    virtual_media,
)
from ..redfish.models import as_dict
from ..redfish.update_tracking import Progress

# What a power action reads back as once the BMC took it: the state itself or the way to it.
POWER_READS: dict[PowerAction, frozenset[PowerState]] = {
    PowerAction.ON: frozenset({PowerState.ON, PowerState.POWERING_ON}),
    PowerAction.OFF: frozenset({PowerState.OFF, PowerState.POWERING_OFF}),
    PowerAction.GRACEFUL_OFF: frozenset({PowerState.OFF, PowerState.POWERING_OFF}),
}
# Looks at a firmware update that end the following (the rest are "look again").
SETTLED = frozenset({Progress.DONE, Progress.FAILED, Progress.VANISHED, Progress.NEEDS_HOST_RESET})
URL_SCHEMES = ("http", "https", "ftp", "sftp", "scp", "tftp", "nfs", "cifs", "smb")


class NotVerified(errors.RedfishError):
    """The BMC accepted the act, but what it reads back afterwards does not show it."""


def boot_once(
    client: RedfishClient, target: str, *, reset: bool, read_back: bool
) -> dict[str, Any]:
    """Boot `target` once: stage the override, read it back, then power on (or restart)."""
    staged = client.set_boot_override(target, once=True)
    seen: dict[str, Any] = {"staged": as_dict(staged)}
    if read_back and "dell_oem" not in staged.detail:
        # iDRAC's VCD-DVD one-time boot lives in its configuration job, not in Boot: the
        # job's acceptance is all there is to read.
        seen["boot_override"] = as_dict(client.boot_override())
        differs = boot.read_back_differs(client, target)
        if differs:
            raise NotVerified(client.transport.absolute(client.system_path()), differs)
    if reset:
        off = client.power_state() in (PowerState.OFF, PowerState.POWERING_OFF)
        action = PowerAction.ON if off else PowerAction.RESTART
        seen["reset"] = as_dict(client.reset(action))
    return seen


def insert_media(client: RedfishClient, image_url: str, *, read_back: bool) -> dict[str, Any]:
    """Put an image in the virtual CD; virtual_media.insert reads it back."""
    return {"media": as_dict(virtual_media.insert(client, image_url, read_back=read_back))}


def eject_media(client: RedfishClient, *, read_back: bool) -> dict[str, Any]:
    """Take the medium out of the virtual CD and read that back."""
    after = virtual_media.eject(client)
    if read_back and after.inserted:
        raise NotVerified(
            client.transport.absolute(after.path), f"the virtual CD still holds {after.image!r}"
        )
    return {"media": as_dict(after)}


def set_bios(client: RedfishClient, changes: dict[str, Any], *, read_back: bool) -> dict[str, Any]:
    """Stage BIOS attributes for the next reset and read the pending values back."""
    staged = client.set_bios_attributes(changes)
    seen: dict[str, Any] = {"staged": as_dict(staged)}
    if read_back:
        pending = client.bios_pending()
        seen["pending"] = {name: pending.get(name) for name in changes}
        wrong = {
            name: pending.get(name) for name, value in changes.items() if pending.get(name) != value
        }
        if wrong:
            raise NotVerified(staged.url, f"the pending BIOS settings read back {wrong}")
    return seen


def power(
    client: RedfishClient, action: PowerAction, *, read_back: bool, wait: float, interval: float
) -> dict[str, Any]:
    """Ask for a power action and read the power state until it shows it (up to `wait` s)."""
    staged = client.reset(action)
    seen: dict[str, Any] = {"staged": as_dict(staged)}
    if not read_back:
        return seen
    wanted = POWER_READS.get(action)
    deadline = time.monotonic() + wait
    state = client.power_state()
    while wanted is not None and state not in wanted and time.monotonic() < deadline:
        time.sleep(interval)
        state = client.power_state()
    seen["power_state"] = state.value
    if state is PowerState.UNKNOWN or (wanted is not None and state not in wanted):
        raise NotVerified(
            client.transport.absolute(client.system_path()),
            f"asked for {action.value}; the power state reads {state.value} after {wait:g}s",
        )
    return seen


def firmware_targets(client: RedfishClient, component: str) -> list[str]:
    """The running firmware inventory entries of a component kind, by path."""
    found = [item.odata_id for item in client.firmware_inventory() if item.kind == component]
    if not found:
        raise errors.ResourceMissing(
            client.transport.absolute("/redfish/v1/UpdateService"),
            f"no running {component} entry in the firmware inventory",
        )
    return found


def update_firmware(
    client: RedfishClient,
    source: str,
    *,
    component: str,
    read_back: bool,
    wait: float,
    interval: float,
    report: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Start an update of a component from a URI (SimpleUpdate) or a file (multipart push), then
    follow it the way the pipeline does, reporting each look, until it settles or `wait` ends."""
    path = Path(source)
    is_file = path.is_file()
    if not is_file and urlsplit(source).scheme.lower() not in URL_SCHEMES:
        raise ValueError(f"{source!r} is neither a file here nor a URL the BMC could fetch")
    targets = firmware_targets(client, component)
    if is_file:
        with path.open("rb") as image:
            staged = client.update_firmware(
                image=image, filename=path.name, targets=targets, kind=component
            )
    else:
        staged = client.update_firmware(image_uri=source, targets=targets, kind=component)
    seen: dict[str, Any] = {"staged": as_dict(staged), "targets": targets}
    if not read_back:
        return seen
    look = follow_update(client, staged, wait=wait, interval=interval, report=report)
    seen["last_look"] = _look_dict(look)
    if look.progress is Progress.FAILED:
        raise NotVerified(staged.url, f"the update failed: {look.words or 'no words given'}")
    seen["inventory"] = [
        as_dict(item) for item in client.firmware_inventory() if item.kind == component
    ]
    return seen


def follow_update(
    client: RedfishClient,
    staged: Any,
    *,
    wait: float,
    interval: float,
    report: Callable[[dict[str, Any]], None],
) -> update_tracking.UpdateLook:
    """Look at an accepted update until it settles or `wait` seconds pass; report every look."""
    receipt = update_tracking.receipt_for(client, staged)
    deadline = time.monotonic() + wait
    while True:
        look = update_tracking.look(client, receipt)
        report(_look_dict(look))
        receipt = look.receipt
        if look.progress in SETTLED or time.monotonic() >= deadline:
            return look
        time.sleep(interval)


def _look_dict(look: update_tracking.UpdateLook) -> dict[str, Any]:
    return {
        "progress": look.progress.value,
        "percent": look.percent,
        "words": look.words,
        "tracking": look.receipt.tracking.value,
        "ref": look.receipt.ref,
    }
