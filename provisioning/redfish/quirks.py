"""Vendor workarounds. Each one names the vendor and firmware it was seen on, and why it exists.

The client stays standard Redfish; a quirk is consulted only at the point where a vendor departs
from the standard, so removing one is a one-line change.
"""

from __future__ import annotations

from typing import Any


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


# Supermicro X11/X12 (Redfish 1.8-1.11): BIOS configuration and firmware update need the
# SFT-DCMS-SINGLE ("OOB") licence; without it the BMC answers 403 with one of these words.
LICENCE_WORDS = ("licen", "sft-dcms", "oob license")


def is_licence_refusal(message: str) -> bool:
    """Whether a 403 message says a licence is missing (a configuration error, not retried)."""
    lowered = message.lower()
    return any(word in lowered for word in LICENCE_WORDS)


def virtual_cd_by_id(media: dict[str, Any]) -> bool:
    """Whether a VirtualMedia member with no MediaTypes is a CD by its Id.

    AMI MegaRAC (Gigabyte G-series, VirtualMedia 1.3.1; redfish-mockups/ami-megarac-gigabyte)
    lists "CD1" with no MediaTypes at all; the Id is the only thing that says CD.
    """
    if media.get("MediaTypes"):
        return False
    return str(media.get("Id") or "").upper().startswith(("CD", "DVD"))


def image_read_back_is_name(read_back: str, wanted: str) -> bool:
    """Whether a VirtualMedia Image read back as a bare file name names the wanted URL.

    AMI MegaRAC keeps "ImageName" beside "Image" and some firmware reports only the name in
    Image once the medium is mounted; the name is what can be compared then.
    """
    name = wanted.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0]
    return read_back.rstrip("/").rsplit("/", 1)[-1] == name


# What a boot override asked for "Once" may read back as. sushy-tools 2.2 (libvirt and fake
# drivers) store it as "Continuous": libvirt has no one-shot boot device. Greenlight sets the
# override again before every reboot it wants, so a lasting one does no harm there.
ONCE_READS_BACK = ("Once", "Continuous")
