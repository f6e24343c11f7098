"""What the client sees on one BMC, as plain JSON-ready data (redfish_probe and enrollment)."""

from __future__ import annotations

from typing import Any

from . import hardware, topology
from .client import RedfishClient
from .errors import RedfishError
from .models import as_dict


def probe(client: RedfishClient) -> dict[str, Any]:
    """Read identity, power, boot, BIOS count, firmware, MACs, GPUs, NICs, DPUs and drives.

    The system itself must be readable (its errors propagate). Optional features a BMC does not
    offer (sushy-tools has no BIOS or firmware inventory) are reported under "unsupported" with
    the client's reason, instead of failing the whole probe.
    """
    info = client.system_info()
    unsupported: dict[str, str] = {}
    result: dict[str, Any] = {
        "system_id": info.id,
        "system": info.odata_id,
        "manufacturer": info.manufacturer,
        "model": info.model,
        "serial": info.serial,
        "uuid": info.uuid,
        "power_state": info.power_state.value,
        "boot_override": as_dict(info.boot),
        "bios_version": info.bios_version,
        "auth": client.auth_mode,
    }
    result["systems"] = [
        {"id": str(body.get("Id") or ""), "path": path, "host": topology.is_host(body)}
        for path, body in client.systems()
    ]
    result["bios_attribute_count"] = _optional(
        unsupported, "bios", lambda: len(client.bios_attributes())
    )
    entries = _optional(unsupported, "firmware_inventory", client.firmware_entries)
    running = [item for item in entries or [] if item.running]
    result["firmware_inventory"] = as_dict(running) if entries is not None else None
    result["firmware_not_running"] = [item.id for item in entries or [] if not item.running]
    gpus = _optional(unsupported, "gpus", lambda: hardware.gpus(client)) or []
    result["gpus"] = hardware.with_firmware(gpus, running) or hardware.gpus_from_inventory(running)
    adapters = _optional(unsupported, "adapters", lambda: hardware.adapters(client)) or []
    result["nics"] = [a for a in adapters if a["kind"] == "nic"]
    result["dpus"] = [a for a in adapters if a["kind"] == "dpu"]
    result["drives"] = _optional(unsupported, "drives", lambda: hardware.drives(client)) or []
    result["macs"] = _optional(unsupported, "macs", client.mac_addresses)
    result["manager"] = _optional(unsupported, "manager", client.manager_info)
    result["unsupported"] = unsupported
    return result


def _optional(unsupported: dict[str, str], name: str, read) -> Any:
    try:
        return read()
    except RedfishError as exc:
        unsupported[name] = str(exc)
        return None
