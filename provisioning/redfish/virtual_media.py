"""Redfish VirtualMedia: insert Greenlight's boot ISO as the node's virtual CD, and eject it.

Ironic's `redfish-virtual-media` boot is the reference: find the CD/DVD VirtualMedia (under the
system on newer services, under the manager on older ones), eject what is there, InsertMedia the
ISO's URL, and read it back. Where a service departs from this, the departure is a quirk entry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import action_info, errors, quirks
from .links import odata_id

if TYPE_CHECKING:
    from .client import RedfishClient

CD_TYPES = ("CD", "DVD")
# The URI schemes a virtual CD is fetched over, as Redfish's TransferProtocolType names them.
PROTOCOLS = {"https": "HTTPS", "http": "HTTP", "smb": "CIFS", "cifs": "CIFS", "nfs": "NFS"}
OPENBMC_PROTOCOLS = ("HTTPS", "CIFS")
# OpenBMC-based BMCs (NVIDIA's) mount asynchronously: the medium shows a moment after the
# action answers. Looks at the read-back, and the pause between them (seconds).
MOUNT_LOOKS = 6
MOUNT_PAUSE_S = 0.5
# Dummy credentials for an image server that needs none: AMI MegaRAC (the DGX H100 BMC among
# them) refuses InsertMedia without UserName/Password (sushy: "none"/"none", bug 2071945).
DUMMY_CREDENTIALS = {"UserName": "none", "Password": "none"}
# Each parameter a refusal can name, with what to add: at most one retry per parameter.
MISSING_PARAMETER_RETRIES = ("TransferProtocolType", "TransferMethod", "UserName")


@dataclass(frozen=True)
class MediaState:
    """A VirtualMedia device as read back: where it is, what is inserted."""

    path: str
    image: str
    inserted: bool


def find_cd(client: RedfishClient) -> str:
    """The path of the system's virtual CD/DVD; ResourceMissing if it has none."""
    for owner_path in (client.system_path(), client.manager_path()):
        owner = client.get(owner_path)
        link = owner.get("VirtualMedia")
        if not isinstance(link, dict) or not link.get("@odata.id"):
            continue
        collection = odata_id(link, client.transport.absolute(owner_path))
        for path, media in client.expanded_members(collection):
            types = [str(t).upper() for t in media.get("MediaTypes") or []]
            if any(t in CD_TYPES for t in types) or quirks.virtual_cd_by_id(media):
                return path
    raise errors.ResourceMissing(
        client.transport.absolute(client.system_path()), "the BMC offers no virtual CD/DVD"
    )


def state(client: RedfishClient, path: str) -> MediaState:
    """The medium in the virtual CD now."""
    media = client.get(path)
    return MediaState(
        path=path, image=str(media.get("Image") or ""), inserted=bool(media.get("Inserted"))
    )


def insert(client: RedfishClient, image_url: str, *, read_back: bool = True) -> MediaState:
    """Put `image_url` in the virtual CD (ejecting another medium first) and read it back.

    read_back=False (a dry run, whose writes were never sent) returns the read-back unchecked.

    BmcRefused-style RedfishErrors pass through; a read-back that does not show the medium is a
    RedfishError too, since booting from the CD would then boot whatever else is there.
    """
    path = find_cd(client)
    current = state(client, path)
    if current.inserted and same_image(current.image, image_url):
        return current
    if current.inserted:
        eject(client, path)
    media_answer = client.get_answer(path)
    media = media_answer.body or {}
    action = (media.get("Actions") or {}).get("#VirtualMedia.InsertMedia") or {}
    if action.get("target"):
        declared = action_info.declared(client, action, path)
        post_insert(client, declared, insert_body(declared, image_url, client.vendor()))
    else:
        # VirtualMedia before 1.2 (and Lenovo XCC) has no InsertMedia action: the medium is
        # PATCHed in, with If-Match (XCC answers 428 without; quirk row lenovo / virtual media).
        client.patch(
            path,
            {"Image": image_url, "Inserted": True, "WriteProtected": True},
            etag=media_answer.etag,
        )
    after = state(client, path)
    for _ in range(MOUNT_LOOKS - 1):
        if after.inserted and same_image(after.image, image_url):
            break
        time.sleep(MOUNT_PAUSE_S)
        after = state(client, path)
    if read_back and not (after.inserted and same_image(after.image, image_url)):
        # Neither URL is named: a node's ISO URL carries the key that serves its boot
        # credential, and this error reaches events and API readers.
        seen = "another image" if after.image else "no image"
        raise errors.RedfishError(
            client.transport.absolute(path),
            f"virtual media reads back {seen} (inserted={after.inserted}), "
            "not the medium just inserted",
        )
    return after


def insert_body(declared: action_info.Declared, image_url: str, vendor: str) -> dict[str, Any]:
    """The InsertMedia body: Image, and what the BMC requires or its vendor needs.

    Inserted and WriteProtected are left at their defaults (true): Supermicro X11/X12 refuse
    them, as sushy learnt. Nothing the ActionInfo does not list is sent.
    """
    body: dict[str, Any] = {"Image": image_url}
    protocol = transfer_protocol(image_url)
    allowed = declared.allowable("TransferProtocolType")
    if allowed is not None and protocol not in allowed:
        raise errors.ActionNotSupported(
            declared.target,
            f"this BMC mounts images over {', '.join(allowed)} only, not {protocol}",
        )
    if vendor == "nvidia" and protocol not in OPENBMC_PROTOCOLS:
        # bmcweb parses only https:// and smb:// for a proxy-less mount (quirk row nvidia).
        raise errors.ConfigurationError(
            declared.target,
            f"this BMC mounts only https:// or smb:// images, not {protocol}: serve the boot "
            "media over HTTPS (GREENLIGHT_BOOT_MEDIA_URL)",
        )
    if declared.required("TransferProtocolType") or (
        vendor == "ami" and declared.takes("TransferProtocolType")
    ):
        body["TransferProtocolType"] = protocol
    if declared.required("TransferMethod"):
        body["TransferMethod"] = "Stream"
    if declared.required("UserName") or (vendor == "ami" and declared.takes("UserName")):
        body.update(DUMMY_CREDENTIALS)
    return body


def transfer_protocol(image_url: str) -> str:
    """The TransferProtocolType of an image URL (HTTPS for https://...)."""
    scheme = urlsplit(image_url).scheme.lower()
    return PROTOCOLS.get(scheme, scheme.upper())


def post_insert(client: RedfishClient, declared: action_info.Declared, body: dict[str, Any]):
    """POST InsertMedia, adding a parameter the BMC says is missing, once per parameter."""
    sent = dict(body)
    for _ in range(len(MISSING_PARAMETER_RETRIES) + 1):
        try:
            return client.transport.request("POST", declared.target, json=sent)
        except errors.RequestRejected as exc:
            added = _add_missing(exc, sent)
            if not added:
                raise
    return None


def _add_missing(exc: errors.RedfishError, body: dict[str, Any]) -> bool:
    """Add the parameter a refusal names as missing; False when it names none we can supply."""
    words = " ".join([exc.reason, *(m.message for m in exc.messages)]).lower()
    words += " " + " ".join(a.lower() for m in exc.messages for a in m.args)
    if "transferprotocoltype" in words and "TransferProtocolType" not in body:
        body["TransferProtocolType"] = transfer_protocol(str(body["Image"]))
        return True
    if "transfermethod" in words and "TransferMethod" not in body:
        body["TransferMethod"] = "Stream"
        return True
    if ("username" in words or "password" in words) and "UserName" not in body:
        body.update(DUMMY_CREDENTIALS)
        return True
    return False


def eject(client: RedfishClient, path: str | None = None) -> MediaState:
    """Take the medium out of the virtual CD (nothing to do when it is empty)."""
    path = path or find_cd(client)
    current = state(client, path)
    if not current.inserted:
        return current
    media = client.get(path)
    action = (media.get("Actions") or {}).get("#VirtualMedia.EjectMedia") or {}
    if action.get("target"):
        client.transport.request("POST", action["target"], json={})
    else:
        client.patch(path, {"Image": None, "Inserted": False})
    return state(client, path)


def same_image(read_back: str, wanted: str) -> bool:
    """Whether the read-back Image names the wanted URL (some BMCs keep only its file name)."""
    if read_back == wanted:
        return True
    return bool(read_back) and quirks.image_read_back_is_name(read_back, wanted)
