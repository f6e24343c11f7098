"""Redfish VirtualMedia: insert Greenlight's boot ISO as the node's virtual CD, and eject it.

Ironic's `redfish-virtual-media` boot is the reference: find the CD/DVD VirtualMedia (under the
system on newer services, under the manager on older ones), eject what is there, InsertMedia the
ISO's URL, and read it back. Where a service departs from this, the departure is a quirk entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import errors, quirks
from .client import odata_id

if TYPE_CHECKING:
    from .client import RedfishClient

CD_TYPES = ("CD", "DVD")


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


def insert(client: RedfishClient, image_url: str) -> MediaState:
    """Put `image_url` in the virtual CD (ejecting another medium first) and read it back.

    BmcRefused-style RedfishErrors pass through; a read-back that does not show the medium is a
    RedfishError too, since booting from the CD would then boot whatever else is there.
    """
    path = find_cd(client)
    current = state(client, path)
    if current.inserted and same_image(current.image, image_url):
        return current
    if current.inserted:
        eject(client, path)
    media = client.get(path)
    action = (media.get("Actions") or {}).get("#VirtualMedia.InsertMedia") or {}
    body: dict[str, Any] = {"Image": image_url, "Inserted": True, "WriteProtected": True}
    if action.get("target"):
        client.transport.request("POST", action["target"], json=body)
    else:
        # VirtualMedia before 1.2 had no InsertMedia action: the medium was PATCHed in.
        client.patch(path, {"Image": image_url, "Inserted": True})
    after = state(client, path)
    if not (after.inserted and same_image(after.image, image_url)):
        raise errors.RedfishError(
            client.transport.absolute(path),
            f"virtual media reads back {after.image or 'nothing'!r} "
            f"(inserted={after.inserted}), not {image_url!r}",
        )
    return after


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
