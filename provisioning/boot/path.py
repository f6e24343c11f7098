"""How a node boots Greenlight's ephemeral environment: the manifest's choice, made real.

`virtual_media` inserts the node's own ISO (its credential on the kernel command line) as the
BMC's virtual CD and boots it once; `uefi_http` hands the BMC the same ISO's URL as the UEFI HTTP
boot URI; `pxe` is for sites with their own DHCP and iPXE, which chain to the node's iPXE script
that Greenlight serves by MAC. Each act is read back before the node is reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from fleet.choices import EphemeralBoot

from ..models import BootCredential, Run
from ..redfish import virtual_media
from ..redfish.client import RedfishClient
from ..site_work import node_plane_urls
from .credentials import ephemeral_credential

BootMethod = EphemeralBoot


# The Redfish boot override target each method boots once from.
OVERRIDE_TARGET = {
    BootMethod.VIRTUAL_MEDIA: "Cd",
    BootMethod.UEFI_HTTP: "UefiHttp",
    BootMethod.PXE: "Pxe",
}


def boot_method(manifest: dict[str, Any]) -> BootMethod:
    """The manifest's ephemeral boot method (PXE when it names none)."""
    return BootMethod((manifest.get("ephemeral") or {}).get("boot") or BootMethod.PXE)


def media_url(credential: BootCredential) -> str:
    """Where a BMC fetches the node's ISO, named by the credential's media key: from its site's
    own node plane where it has one."""
    base = node_plane_urls(credential.node_id)[1].rstrip("/")
    return f"{base}/boot/v1/media/{credential.media_key}.iso"


def ipxe_chain_url() -> str:
    """What a site's DHCP hands iPXE: the script URL, with iPXE filling in the booting MAC."""
    base = settings.GREENLIGHT_BOOT_MEDIA_URL.rstrip("/")
    return f"{base}/boot/v1/ipxe?mac=${{net0/mac}}"


@dataclass(frozen=True)
class PreparedBoot:
    """What was prepared: the override target to boot once, and the URI it fetches."""

    method: BootMethod
    target: str
    http_boot_uri: str = ""
    medium: str = ""


def prepare(bmc: RedfishClient, run: Run, manifest: dict[str, Any]) -> PreparedBoot:
    """Mint (or reuse) the run's credential and put its medium where the node will boot it."""
    method = boot_method(manifest)
    credential = ephemeral_credential(run)
    target = OVERRIDE_TARGET[method]
    if method == BootMethod.VIRTUAL_MEDIA:
        inserted = virtual_media.insert(bmc, media_url(credential))
        return PreparedBoot(method, target, medium=inserted.path)
    if method == BootMethod.UEFI_HTTP:
        return PreparedBoot(method, target, http_boot_uri=media_url(credential))
    return PreparedBoot(method, target)


def release_medium(bmc: RedfishClient, manifest: dict[str, Any]) -> bool:
    """Eject the virtual CD before the node boots its disk; True when something was ejected."""
    if boot_method(manifest) != BootMethod.VIRTUAL_MEDIA:
        return False
    before = virtual_media.state(bmc, virtual_media.find_cd(bmc))
    if not before.inserted:
        return False
    virtual_media.eject(bmc, before.path)
    return True
