"""The lab BMC's virtual CD and the writes that boot from it, in each vendor's flavour.

One virtual CD per node, where the vendor hangs it (under the system on iDRAC and XCC, under the
manager elsewhere), with InsertMedia/EjectMedia actions or, on XCC, a PATCH of Image and
Inserted. iDRAC also takes its OEM one-time boot to the virtual CD through
ImportSystemConfiguration (Server Configuration Profile), as sushy's Dell OEM
`set_virtual_boot_device` sends it.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

from . import refusals
from .answers import json_body
from .resources import Paths, collection

if TYPE_CHECKING:
    from .app import BmcApp

# iDRAC's SCP import action (sushy oem/dell/resources/manager/manager.py).
SCP_IMPORT = "Actions/Oem/EID_674_Manager.ImportSystemConfiguration"
# The SCP attributes that set the one-time boot to the virtual CD, in XML or JSON form.
BOOT_ONCE = "ServerBoot.1#BootOnce"
FIRST_BOOT_DEVICE = "ServerBoot.1#FirstBootDevice"
XML_ATTRIBUTE = re.compile(r'<Attribute Name="([^"]+)">\s*([^<]*?)\s*</Attribute>')


def virtual_cd(paths: Paths, image: str, inserted: bool) -> dict[str, Any]:
    """The virtual CD as the flavour's BMC serves it."""
    f = paths.f
    body: dict[str, Any] = {
        "@odata.id": f.link(paths.cd),
        "@odata.type": "#VirtualMedia.v1_4_0.VirtualMedia",
        "Id": f.media_id,
        "Name": "Virtual CD",
        "Image": image or None,
        "ImageName": image.rsplit("/", 1)[-1] if image else None,
        "Inserted": inserted,
        "WriteProtected": True,
        "ConnectedVia": "URI" if inserted else "NotConnected",
    }
    if f.media_types:
        body["MediaTypes"] = list(f.media_types)
    if f.media_insert_action:
        body["Actions"] = {
            "#VirtualMedia.InsertMedia": {"target": f.link(insert_path(paths))},
            "#VirtualMedia.EjectMedia": {"target": f.link(eject_path(paths))},
        }
    return body


def insert_path(paths: Paths) -> str:
    return f"{paths.cd}/Actions/VirtualMedia.InsertMedia"


def eject_path(paths: Paths) -> str:
    return f"{paths.cd}/Actions/VirtualMedia.EjectMedia"


def scp_boot_once(body: dict[str, Any]) -> bool | None:
    """Whether an SCP import body asks for a one-time boot to VCD-DVD; None if it is not one
    this lab understands (ShareParameters.Target must take in the iDRAC component)."""
    target = (body.get("ShareParameters") or {}).get("Target") or ""
    # sushy sends ["ALL"]; Dell's scripts send "ALL" or a comma-separated string.
    names = target if isinstance(target, list) else str(target).split(",")
    if not {"ALL", "IDRAC"} & {str(t).strip().upper() for t in names}:
        return None
    attributes = scp_attributes(body.get("ImportBuffer"))
    if not attributes:
        return None
    return attributes.get(BOOT_ONCE) == "Enabled" and attributes.get(FIRST_BOOT_DEVICE) == "VCD-DVD"


def scp_attributes(buffer: Any) -> dict[str, str]:
    """The attributes an SCP ImportBuffer sets, from its XML or its JSON form."""
    if isinstance(buffer, str) and buffer.lstrip().startswith("<"):
        return {name: value.strip() for name, value in XML_ATTRIBUTE.findall(buffer)}
    try:
        document = json.loads(buffer) if isinstance(buffer, str) else buffer
    except ValueError:
        return {}
    if not isinstance(document, dict):
        return {}
    attributes = {}
    for component in (document.get("SystemConfiguration") or {}).get("Components") or []:
        for attribute in component.get("Attributes") or []:
            attributes[str(attribute.get("Name"))] = str(attribute.get("Value"))
    return attributes


class MediaRoutes:
    """The virtual-CD and Dell SCP handlers of one lab BMC."""

    def __init__(self, app: BmcApp) -> None:
        self.app = app
        self.paths = app.paths
        self.flavour = app.flavour
        self.node = app.node

    def add_to(self) -> None:
        """Register this BMC's virtual-media routes on its app."""
        p, add = self.paths, self.app._add
        add(p.media, GET=self._collection)
        add(p.cd, GET=self._get, PATCH=self._patch)
        if self.flavour.media_insert_action:
            add(insert_path(p), POST=self._insert)
            add(eject_path(p), POST=self._eject)
        if self.flavour.scp_import:
            add(f"{p.manager}/{SCP_IMPORT}", POST=self._import_scp)

    def _body(self) -> dict[str, Any]:
        return virtual_cd(self.paths, self.node.media_image, self.node.media_inserted)

    async def _collection(self, request, match):
        members = [self.paths.cd]
        return self.app._doc(collection(self.paths, self.paths.media, members, "VirtualMedia"))

    async def _get(self, request, match):
        return self.app._doc(self._body())

    async def _insert(self, request, match):
        body = await json_body(request)
        if body is None:
            return refusals.error(400, "Base.1.12.MalformedJSON", "The request body is not JSON")
        refused = refusals.insert_media(self.flavour, body, insert_path(self.paths))
        if refused:
            return refused
        image = str(body.get("Image") or "")
        if not image:
            return refusals.parameter_missing(insert_path(self.paths), ["Image"])
        self.node.insert_media(image, self.app._now(), self.flavour.media_mount_seconds)
        return web.Response(status=204)

    async def _eject(self, request, match):
        self.node.eject_media()
        return web.Response(status=204)

    async def _patch(self, request, match):
        """VirtualMedia before InsertMedia (XCC): PATCH Image and Inserted, with If-Match."""
        refused = self.app._if_match(request, self._body(), required=False)
        if refused:
            return refused
        body = await json_body(request) or {}
        if body.get("Inserted") is False or ("Image" in body and not body["Image"]):
            self.node.eject_media()
        elif body.get("Image"):
            self.node.insert_media(str(body["Image"]), self.app._now(), 0.0)
        else:
            return refusals.error(400, "Base.1.12.PropertyMissing", "Image is required")
        return web.Response(status=204)

    async def _import_scp(self, request, match):
        """iDRAC's SCP import: here only the one-time boot to the virtual CD."""
        if self.node.bios_job:
            return refusals.import_refused_while_pending()
        body = await json_body(request) or {}
        boot_once = scp_boot_once(body)
        if boot_once is None:
            return refusals.error(
                400,
                "IDRAC.2.8.SYS041",
                "Unable to import the Server Configuration Profile: no ImportBuffer for the "
                "iDRAC component",
            )
        self.node.boot_once_virtual_cd = boot_once
        # iDRAC answers with a job that imports the profile (Location: .../Jobs/JID_...).
        task = self.node.scp_job(self.app._now())
        response = web.Response(status=202)
        response.headers["Location"] = self.flavour.link(f"{self.paths.tasks}/{task}")
        return response
