"""The aiohttp application of one lab BMC: faults, auth, then Redfish resources of its node.

Paths are matched case-insensitively and without a trailing slash, as real iLOs do, so each
flavour can spell its links its own way.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import secrets
from typing import Any

from aiohttp import web

from ..clock import LabClock
from ..node import LabNode
from . import refusals
from . import resources as r
from .answers import Handler, canonical, document, etag_of, json_body, redfish_error
from .flavours import Flavour
from .media import MediaRoutes
from .update_service import UpdateServiceHandlers

# Real seconds a "bmc_timeout" fault holds an answer: longer than any timeout tests use.
TIMEOUT_HOLD_SECONDS = 3.0
LICENCE_MESSAGE = "Not licensed to perform this request. The SFT-DCMS-SINGLE license is required."


@web.middleware
async def etag_strength(request: web.Request, handler) -> web.StreamResponse:
    """Serve ETags weak when the request accepts gzip, as iLO and XCC do (a compressed answer
    is not byte-identical), and strong for Accept-Encoding: identity."""
    response = await handler(request)
    etag = response.headers.get("ETag", "")
    if etag and not etag.startswith("W/") and "gzip" in request.headers.get("Accept-Encoding", ""):
        response.headers["ETag"] = "W/" + etag
    return response


class BmcApp(UpdateServiceHandlers):
    """One simulated BMC in front of one LabNode."""

    def __init__(self, node: LabNode, flavour: Flavour, clock: LabClock) -> None:
        self.node = node
        self.flavour = flavour
        self.clock = clock
        self.paths = r.Paths(flavour)
        self.routes: list[tuple[re.Pattern[str], dict[str, Handler]]] = []
        self._route_table()

    def application(self) -> web.Application:
        """The aiohttp application serving this BMC."""
        app = web.Application(middlewares=[self._faults, self._auth, etag_strength])
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    # -- routing ----------------------------------------------------------------------------

    def _add(self, path: str, **handlers: Handler) -> None:
        pattern = re.escape(canonical(path)).replace(re.escape("{id}"), r"(?P<id>[^/]+)")
        self.routes.append((re.compile(pattern + "$"), handlers))

    def _route_table(self) -> None:
        p = self.paths
        self._add("/redfish/v1", GET=self._root)
        self._add("/redfish/v1/SessionService", GET=self._session_service)
        self._add(p.sessions, GET=self._sessions, POST=self._login)
        self._add(p.sessions + "/{id}", GET=self._session, DELETE=self._logout)
        # DGX H100 lists the HGX baseboard before the host: the host is found by what it is.
        systems = [p.baseboard, p.system] if self.flavour.baseboard else [p.system]
        managers = [p.hmc, p.manager] if self.flavour.baseboard else [p.manager]
        self._add("/redfish/v1/Systems", GET=self._collection(systems, "ComputerSystem"))
        if self.flavour.baseboard:
            self._add(p.baseboard, GET=lambda req, m: self._doc(r.baseboard(p, self.node)))
            self._add(p.gpu_processors, GET=self._parts(p.gpu_processors, r.gpus, "Processor"))
            self._add(p.gpu_processors + "/{id}", GET=self._part(r.gpus))
            self._add(p.hmc, GET=lambda req, m: self._doc(r.hmc(p, self.node)))
        self._add(p.system, GET=self._system, PATCH=self._patch_system)
        if p.system_settings:
            self._add(p.system_settings, GET=self._system_settings, PATCH=self._patch_settings)
        MediaRoutes(self).add_to()
        self._add(p.reset, POST=self._reset)
        self._add(p.eth, GET=self._eth_collection)
        self._add(p.eth + "/{id}", GET=self._eth)
        self._add(p.bios, GET=self._bios)
        self._add(p.settings, GET=self._bios_settings, PATCH=self._patch_bios)
        self._add(p.processors, GET=self._parts(p.processors, r.processors, "Processor"))
        self._add(p.processors + "/{id}", GET=self._part(r.processors))
        self._add(p.adapters, GET=self._parts(p.adapters, r.network_adapters, "NetworkAdapter"))
        self._add(p.adapters + "/{id}", GET=self._part(r.network_adapters))
        self._add(p.storage, GET=self._collection([f"{p.storage}/1"], "Storage"))
        self._add(p.storage + "/1", GET=lambda req, m: self._doc(r.storage(p, self.node)))
        self._add(p.drives + "/{id}", GET=self._drive)
        self._add("/redfish/v1/Managers", GET=self._collection(managers, "Manager"))
        self._add(p.manager, GET=lambda req, m: self._doc(r.manager(p, self.node)))
        self._add("/redfish/v1/Chassis", GET=self._collection([p.chassis], "Chassis"))
        if self.flavour.member == "switch_tray":
            self._add(p.fabrics, GET=self._parts(p.fabrics, r.nvlink_fabrics, "Fabric"))
            self._add(p.fabrics + "/{id}", GET=self._part(r.nvlink_fabrics))
        self._add(p.chassis, GET=lambda req, m: self._doc(r.chassis(p, self.node)))
        self._firmware_routes()

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = canonical(request.path)
        for pattern, handlers in self.routes:
            match = pattern.match(path)
            if match:
                handler = handlers.get(request.method)
                if handler is None:
                    return redfish_error(405, f"{request.method} is not allowed on {path}")
                if request.method == "GET" or "/sessions" in path:
                    return await _call(handler, request, match)
                # A mutating act (logins aside): counted while it is answered, so a test can
                # say no BMC ever saw two at once (issue 36).
                node = self.node
                node.acts_in_flight += 1
                node.most_acts_in_flight = max(node.most_acts_in_flight, node.acts_in_flight)
                try:
                    return await _call(handler, request, match)
                finally:
                    node.acts_in_flight -= 1
        return redfish_error(
            404, f"resource at {request.path} was not found", "Base.1.8.ResourceMissingAtURI"
        )

    # -- middlewares ------------------------------------------------------------------------

    @web.middleware
    async def _faults(self, request: web.Request, handler) -> web.StreamResponse:
        faults = self.node.faults
        self.node.requests += 1
        self.node.origins[request.headers.get("User-Agent", "")] += 1
        if request.method not in ("GET", "HEAD") and "/sessions" not in canonical(request.path):
            self.node.writes.append(f"{request.method} {request.path}")
        elif request.method == "GET":
            self.node.reads[canonical(request.path)] += 1
        if faults.has("bmc_unreachable"):
            # Drop the connection without an answer, as a BMC that is down or cut off does.
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError
        if faults.roll("bmc_503"):
            response = redfish_error(503, "The service is temporarily unavailable")
            response.headers["Retry-After"] = "0"
            return response
        if faults.roll("bmc_timeout"):
            await asyncio.sleep(TIMEOUT_HOLD_SECONDS)
        self.node.tick(self.clock.now())
        return await handler(request)

    @web.middleware
    async def _auth(self, request: web.Request, handler) -> web.StreamResponse:
        path = canonical(request.path)
        public = path in ("/redfish", "/redfish/v1") or (
            request.method == "POST" and path == canonical(self.paths.sessions)
        )
        if public or self._authorised(request):
            return await handler(request)
        response = redfish_error(401, "Authentication required or credentials refused")
        response.headers["WWW-Authenticate"] = 'Basic realm="Redfish"'
        return response

    def _authorised(self, request: web.Request) -> bool:
        token = request.headers.get("X-Auth-Token")
        if token:
            return token in self.node.sessions
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return self._credentials_ok(user, password)

    def _credentials_ok(self, user: str, password: str) -> bool:
        if self.node.faults.has("wrong_credentials"):
            return False  # the BMC's password is not the one the inventory knows
        return secrets.compare_digest(user, self.node.username) and secrets.compare_digest(
            password, self.node.password
        )

    # -- small helpers ----------------------------------------------------------------------

    def _doc(self, body: dict[str, Any], status: int = 200) -> web.Response:
        return document(body, status)

    def _collection(self, members: list[str], name: str) -> Handler:
        async def handler(request: web.Request, match: re.Match[str]) -> web.Response:
            path = canonical(request.path)
            return self._doc(r.collection(self.paths, path, members, name))

        return handler

    def _parts(self, path: str, render, name: str) -> Handler:
        """A collection of parts the node has (processors, adapters), expanded on request."""

        async def handler(request: web.Request, match: re.Match[str]) -> web.Response:
            bodies = render(self.paths, self.node)
            members = [b["@odata.id"] for b in bodies]
            body = r.collection(self.paths, path, members, name)
            if self._expands(request):
                body["Members"] = bodies
            return self._doc(body)

        return handler

    def _part(self, render) -> Handler:
        async def handler(request: web.Request, match: re.Match[str]) -> web.Response:
            for body in render(self.paths, self.node):
                if body["Id"].lower() == match["id"]:
                    return self._doc(body)
            return redfish_error(404, "no such part", "Base.1.8.ResourceMissingAtURI")

        return handler

    async def _drive(self, request, match):
        if match["id"].isdigit() and int(match["id"]) < len(self.node.drives):
            return self._doc(r.drive(self.paths, self.node, int(match["id"])))
        return redfish_error(404, "no such drive", "Base.1.8.ResourceMissingAtURI")

    def _gated(self) -> web.Response | None:
        if self.flavour.licence_gated and (
            not self.node.licensed or self.node.faults.has("licence_missing")
        ):
            return redfish_error(403, LICENCE_MESSAGE, "SMC.1.0.OemLicenseNotPassed")
        return None

    def _if_match(self, request: web.Request, current: dict[str, Any], required: bool):
        wanted = request.headers.get("If-Match")
        return refusals.if_match(self.flavour, wanted, etag_of(current), required)

    def _now(self) -> float:
        return self.clock.now()

    # -- sessions ---------------------------------------------------------------------------

    async def _root(self, request, match):
        root = r.service_root(self.paths, self.node)
        if self.flavour.expand_query is not None:
            root["ProtocolFeaturesSupported"] = {"ExpandQuery": self.flavour.expand_query}
        return self._doc(root)

    async def _session_service(self, request, match):
        return self._doc(
            {
                "@odata.id": self.flavour.link("/redfish/v1/SessionService"),
                "Id": "SessionService",
                "ServiceEnabled": True,
                "Sessions": self.paths.link(self.paths.sessions),
            }
        )

    async def _sessions(self, request, match):
        members = [f"{self.paths.sessions}/{sid}" for sid in self.node.sessions.values()]
        return self._doc(r.collection(self.paths, self.paths.sessions, members, "Session"))

    async def _login(self, request, match):
        body = await json_body(request)
        if body is None:
            return redfish_error(400, "The request body is not valid JSON")
        user, password = str(body.get("UserName", "")), str(body.get("Password", ""))
        if not self._credentials_ok(user, password):
            return redfish_error(401, "Invalid username or password")
        token = secrets.token_hex(16)
        session_id = secrets.token_hex(4)
        self.node.sessions[token] = session_id
        location = self.flavour.link(f"{self.paths.sessions}/{session_id}")
        response = self._doc({"@odata.id": location, "Id": session_id, "UserName": user}, 201)
        response.headers["X-Auth-Token"] = token
        response.headers["Location"] = location
        return response

    async def _session(self, request, match):
        session_id = match["id"]
        if session_id not in self.node.sessions.values():
            return redfish_error(404, "no such session")
        path = f"{self.paths.sessions}/{session_id}"
        return self._doc({"@odata.id": self.flavour.link(path), "Id": session_id})

    async def _logout(self, request, match):
        for token, session_id in list(self.node.sessions.items()):
            if session_id == match["id"]:
                del self.node.sessions[token]
                return web.Response(status=204)
        return redfish_error(404, "no such session")

    # -- system -----------------------------------------------------------------------------

    async def _system(self, request, match):
        return self._doc(r.system(self.paths, self.node))

    async def _system_settings(self, request, match):
        return self._doc(r.system_settings(self.paths, self.node))

    async def _patch_system(self, request, match):
        if self.paths.system_settings:
            # NVIDIA DGX H100 / GB200: the override goes to the settings object only.
            return refusals.boot_on_settings_only(self.paths.system_settings)
        return await self._patch_boot(request, r.system(self.paths, self.node))

    async def _patch_settings(self, request, match):
        return await self._patch_boot(request, r.system_settings(self.paths, self.node))

    async def _patch_boot(self, request, current: dict[str, Any]):
        refused = self._if_match(request, current, required=False)
        if refused:
            return refused
        body = await json_body(request)
        boot = (body or {}).get("Boot")
        if not isinstance(boot, dict):
            return redfish_error(400, "only Boot can be changed on this system")
        refused = refusals.boot_patch(self.flavour, self.node, boot, self._now())
        if refused:
            return refused
        target = boot.get("BootSourceOverrideTarget")
        enabled = boot.get("BootSourceOverrideEnabled")
        mode = boot.get("BootSourceOverrideMode")
        if target is not None and target not in self.flavour.boot_targets:
            return redfish_error(400, f"{target} is not an allowed BootSourceOverrideTarget")
        allowed_enabled = self.flavour.boot_enabled_values or ("Once", "Continuous", "Disabled")
        if enabled is not None and enabled not in allowed_enabled:
            return redfish_error(400, f"{enabled} is not an allowed BootSourceOverrideEnabled")
        if mode is not None and mode not in ("UEFI", "Legacy"):
            return redfish_error(400, f"{mode} is not an allowed BootSourceOverrideMode")
        self.node.set_boot(target, enabled, mode)
        return web.Response(status=204)

    async def _reset(self, request, match):
        body = await json_body(request) or {}
        reset_type = body.get("ResetType")
        if reset_type not in r.reset_types(self.flavour):
            return redfish_error(400, f"ResetType {reset_type!r} is not allowed")
        if reset_type == "PowerCycle" and self.flavour.bmc_activation == "power_cycle":
            return self._ac_cycle()
        refused = self.node.reset(reset_type, self._now())
        if refused:
            return redfish_error(409, refused)
        return web.Response(status=204)

    def _ac_cycle(self) -> web.Response:
        """An NVLink switch tray's PowerCycle, its AC cycle (member_flavours.py): the tray
        loses power and comes back on, off or not, and its pending images run."""
        now = self._now()
        # Down first, so the BMC's restart finds the tray off and its fabric re-forms at boot.
        self.node.reset("PowerCycle" if self.node.power != "Off" else "On", now)
        self.node.activate("power_cycle", now)
        return web.Response(status=204)

    async def _eth_collection(self, request, match):
        members = [
            f"{self.paths.eth}/{r.nic_id(self.flavour, i)}" for i in range(len(self.node.nics))
        ]
        body = r.collection(self.paths, self.paths.eth, members, "EthernetInterface")
        if self._expands(request):
            body["Members"] = [
                r.ethernet_interface(self.paths, self.node, i) for i in range(len(self.node.nics))
            ]
        return self._doc(body)

    def _expands(self, request) -> bool:
        """Whether to answer a collection with its members' bodies ($expand=. or *)."""
        expand = request.query.get("$expand", "")[:1]
        return self.flavour.expand_query is not None and expand in ("*", ".")

    async def _eth(self, request, match):
        for index in range(len(self.node.nics)):
            if r.nic_id(self.flavour, index).lower() == match["id"]:
                return self._doc(r.ethernet_interface(self.paths, self.node, index))
        return redfish_error(404, "no such interface")

    # -- BIOS -------------------------------------------------------------------------------

    async def _bios(self, request, match):
        return self._doc(r.bios(self.paths, self.node))

    async def _bios_settings(self, request, match):
        return self._doc(r.bios_settings(self.paths, self.node))

    async def _patch_bios(self, request, match):
        gated = self._gated()
        if gated:
            return gated
        current = r.bios_settings(self.paths, self.node)
        refused = self._if_match(request, current, required=self.flavour.etag_required)
        if refused:
            return refused
        body = await json_body(request)
        attributes = (body or {}).get("Attributes")
        if not isinstance(attributes, dict) or not attributes:
            return redfish_error(400, "Attributes must be a non-empty object")
        refused = refusals.bios_patch(self.flavour, self.node, body or {})
        if refused:
            return refused
        unknown = sorted(set(attributes) - set(self.node.bios_current))
        if unknown:
            return redfish_error(400, f"unknown BIOS attributes: {', '.join(unknown)}")
        apply_time = ((body or {}).get("@Redfish.SettingsApplyTime") or {}).get("ApplyTime")
        job = self.flavour.bios_job and apply_time == "OnReset"
        job_id = self.node.stage_bios(attributes, self._now(), job=job)
        if job_id:
            location = self.flavour.link(f"{self.paths.tasks}/{job_id}")
            response = web.Response(status=202)
            response.headers["Location"] = location
            return response
        return web.json_response(
            {
                "@Message.ExtendedInfo": [
                    {"MessageId": "Base.1.8.Success", "Message": "Pending settings saved"},
                    {"MessageId": "iLO.2.14.SystemResetRequired", "Message": "Reset required"},
                ]
            }
        )


async def _call(handler: Handler, request: web.Request, match: re.Match[str]):
    result = handler(request, match)
    if asyncio.iscoroutine(result):
        result = await result
    return result
