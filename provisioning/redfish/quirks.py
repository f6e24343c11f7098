"""Vendor workarounds. Each one names the vendor and firmware it was seen on, and why it exists.

The client stays standard Redfish; a quirk is consulted only at the point where a vendor departs
from the standard, so removing one is a one-line change.
"""

from __future__ import annotations

from typing import Any

from .models import FirmwareItem


def is_dell(manufacturer: str) -> bool:
    """Whether the system reports a Dell manufacturer (iDRAC)."""
    return manufacturer.strip().lower().startswith("dell")


def bios_apply_time(manufacturer: str, settings_annotation: dict[str, Any]) -> dict[str, Any]:
    """Extra body fields for a BIOS settings PATCH so the change is applied at the next reset.

    Dell iDRAC 9 (firmware 4.x to 7.x): a PATCH to Bios/Settings only stages values; nothing is
    applied at reset unless a configuration job exists. Asking for ApplyTime OnReset makes the
    iDRAC create that job itself (answered 202 with the job as task monitor). Other BMCs that
    advertise OnReset in SupportedApplyTimes get the same request, which is standard Redfish.
    """
    supported = settings_annotation.get("SupportedApplyTimes") or []
    if is_dell(manufacturer) or "OnReset" in supported:
        return {"@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}}
    return {}


def installed_firmware(items: list[FirmwareItem]) -> list[FirmwareItem]:
    """Drop firmware entries that are not what runs now.

    Dell iDRAC 9: FirmwareInventory lists "Installed-*" next to "Previous-*" (the rollback copy)
    and "Available-*" (uploaded, not applied) entries of the same component; only the installed
    one says what runs.
    """
    if not any(item.id.startswith("Installed-") for item in items):
        return items
    return [item for item in items if not item.id.startswith(("Previous-", "Available-"))]


# Supermicro X11/X12 (Redfish 1.8-1.11): BIOS configuration and firmware update need the
# SFT-DCMS-SINGLE ("OOB") licence; without it the BMC answers 403 with one of these words.
LICENCE_WORDS = ("licen", "sft-dcms", "oob license")


def is_licence_refusal(message: str) -> bool:
    """Whether a 403 message says a licence is missing (a configuration error, not retried)."""
    lowered = message.lower()
    return any(word in lowered for word in LICENCE_WORDS)


def serial_number(system: dict[str, Any], chassis: dict[str, Any] | None) -> str:
    """The node's serial: the system's, else its chassis's.

    HPE iLO 5 and Supermicro put the board serial on both; sushy-tools' fake driver (2.x) and
    some OpenBMC builds leave the system's empty, and the chassis carries it if anything does.
    """
    serial = (system.get("SerialNumber") or "").strip()
    if not serial and chassis:
        serial = (chassis.get("SerialNumber") or "").strip()
    return serial
