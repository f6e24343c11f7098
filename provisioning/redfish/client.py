"""RedfishClient: one BMC, read by following links, written by actions the BMC says it allows.

Readers return plain data (models.py). Writers return a Staged receipt: a 2xx means the BMC
accepted the request, not that it happened, so every writer has a matching reader the caller
uses to verify. Nothing here sleeps for a long wait: task_status() is a single look.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from . import (
    bios,
    boot,
    errors,
    firmware,
    firmware_update,
    integrity,
    quirks,
    topology,
    update_tracking,
)
from .integrity import IntegrityReport
from .links import expand_query, is_weak_etag, odata_id, strong_etag, system_in_address
from .macs import normalize_mac
from .models import (
    BootOverride,
    FirmwareItem,
    PowerAction,
    PowerState,
    Staged,
    SystemInfo,
    TaskState,
    TaskStatus,
)
from .recording import RecordingTransport
from .transport import DEFAULT_MAX_CONCURRENCY, Answer, Transport

SERVICE_ROOT = "/redfish/v1/"

# ResetType values to try for each action, best first. PushPowerButton is never used for "off":
# it toggles, so on a node that is already off it would switch it on.
RESET_PREFERENCES: dict[PowerAction, tuple[str, ...]] = {
    PowerAction.ON: ("On", "ForceOn", "PushPowerButton"),
    PowerAction.OFF: ("ForceOff",),
    PowerAction.GRACEFUL_OFF: ("GracefulShutdown",),
    PowerAction.RESTART: ("ForceRestart", "PowerCycle", "GracefulRestart"),
    PowerAction.GRACEFUL_RESTART: ("GracefulRestart", "ForceRestart"),
}


class RedfishClient:
    """A client for one BMC. Use as a context manager: the session is always logged out."""

    def __init__(
        self,
        base_url: str,
        username: str,
        password: str,
        *,
        fingerprint: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.2,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        use_sessions: bool = True,
        allow_plain_http: bool = False,
        system_id: str | None = None,
        dry_run: bool = False,
    ) -> None:
        # dry_run: writes are recorded in transport.recorded, not sent (recording.py).
        transport_class = RecordingTransport if dry_run else Transport
        self.transport = transport_class(
            base_url,
            username,
            password,
            fingerprint=fingerprint,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            max_concurrency=max_concurrency,
            allow_plain_http=allow_plain_http,
        )
        self.use_sessions = use_sessions
        # Which ComputerSystem is the node, on a BMC that serves several (HPE Cray EX235n): given,
        # or named by the node's BMC address (https://bmc/redfish/v1/Systems/Node1).
        self.system_id = system_id or system_in_address(base_url)
        self._root: dict[str, Any] | None = None
        self._systems: list[tuple[str, dict[str, Any]]] | None = None
        self._managers: list[tuple[str, dict[str, Any]]] | None = None
        self._manager_path: str | None = None
        self._chassis_path: str | None = None
        # Parts that firmware entries link to (adapters, drives, processors), read once per
        # client: their models do not change while it is open, and an inventory is read twice
        # by every firmware phase (before and after its update).
        self.related_cache: dict[str, dict[str, Any] | None] = {}
        self._system_path: str | None = None
        self._manufacturer: str | None = None
        self._vendor: str | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> RedfishClient:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def open(self) -> None:
        """Read the service root and log in (session if offered, else basic auth)."""
        if self._root is not None:
            return
        self._root = self._read_root()
        sessions = None
        if self.use_sessions:
            sessions = self._sessions_path(self._root)
        self.transport.login(sessions)

    def close(self) -> None:
        """Log the session out and close connections."""
        self.transport.logout()

    @property
    def auth_mode(self) -> str:
        """ "session" or "basic": what the BMC accepted."""
        return "session" if self.transport.session_token else "basic"

    def _read_root(self) -> dict[str, Any]:
        try:
            return self.transport.request("GET", SERVICE_ROOT, auth=False).body or {}
        except errors.AuthenticationRefused:
            # Some BMCs (sushy-tools with an auth file) protect even the service root.
            return self.transport.get(SERVICE_ROOT).body or {}

    def _sessions_path(self, root: dict[str, Any]) -> str | None:
        link = (root.get("Links") or {}).get("Sessions")
        if isinstance(link, dict) and link.get("@odata.id"):
            return link["@odata.id"]
        service = root.get("SessionService")
        if isinstance(service, dict) and service.get("@odata.id"):
            return service["@odata.id"].rstrip("/") + "/Sessions"
        return None

    # -- plumbing ---------------------------------------------------------------------------

    def get(self, path: str) -> dict[str, Any]:
        """GET a resource as JSON; its @odata.id must be present."""
        self.open()
        answer = self.transport.get(path)
        odata_id(answer.body or {}, answer.url)
        return answer.body or {}

    def get_answer(self, path: str) -> Answer:
        """GET a resource with its headers (ETag)."""
        self.open()
        answer = self.transport.get(path)
        odata_id(answer.body or {}, answer.url)
        return answer

    def link(self, resource: dict[str, Any], name: str, *, url: str = "") -> str:
        """The path a resource's property links to; its absence is a typed error."""
        target = resource.get(name)
        where = url or resource.get("@odata.id") or "?"
        if target is None:
            raise errors.ResourceMissing(
                self.transport.absolute(where), f"this BMC offers no {name}"
            )
        return odata_id(target, self.transport.absolute(where))

    def expanded_members(self, collection_path: str) -> list[tuple[str, dict[str, Any]]]:
        """Each member of a collection with its body: one GET where the BMC offers $expand.

        Without $expand (or where the BMC ignored or refused it) each member is read on its own,
        which on a firmware inventory is two dozen requests instead of one.
        """
        url = self.transport.absolute(collection_path)
        body = None
        query = expand_query(self.root())
        if query:
            try:
                body = self.get(f"{collection_path}?{query}")
            except (errors.ResourceMissing, errors.ActionNotSupported, errors.RequestRejected):
                body = None
        if body is None:
            body = self.get(collection_path)
        out = []
        for member in body.get("Members") or []:
            path = odata_id(member, url)
            expanded = set(member) - {"@odata.id", "@odata.type", "@odata.etag"}
            out.append((path, member if expanded else self.get(path)))
        return out

    def members(self, collection_path: str) -> list[str]:
        """Member paths of a collection."""
        body = self.get(collection_path)
        url = self.transport.absolute(collection_path)
        return [odata_id(m, url) for m in body.get("Members") or []]

    def root(self) -> dict[str, Any]:
        """The service root."""
        self.open()
        return self._root or {}

    # -- discovery --------------------------------------------------------------------------

    def systems(self) -> list[tuple[str, dict[str, Any]]]:
        """Every ComputerSystem the BMC serves, with its body."""
        if self._systems is None:
            path = self.link(self.root(), "Systems", url=SERVICE_ROOT)
            self._systems = self.expanded_members(path)
        return self._systems

    def host_paths(self) -> list[str]:
        """The systems that are hosts (one node each): a baseboard or a DPU is none."""
        return [path for path, body in self.systems() if topology.is_host(body)]

    def system_path(self) -> str:
        """The path of the node's computer system: the one asked for (system_id), else the host
        chosen by type among the BMC's systems."""
        if self._system_path is None:
            found = self.systems()
            if self.system_id is not None:
                chosen = next(
                    (p for p, body in found if str(body.get("Id")) == self.system_id), None
                )
                if chosen is None:
                    ids = ", ".join(str(body.get("Id")) for _, body in found)
                    raise errors.ResourceMissing(
                        self.transport.absolute(SERVICE_ROOT),
                        f"no system {self.system_id!r} on this BMC (it serves {ids})",
                    )
            else:
                chosen = topology.choose_host(found)
            if chosen is None:
                raise errors.ResourceMissing(
                    self.transport.absolute(SERVICE_ROOT), "the Systems collection is empty"
                )
            self._system_path = chosen
        return self._system_path

    def system(self) -> dict[str, Any]:
        """The raw ComputerSystem resource."""
        return self.get(self.system_path())

    def managers(self) -> list[tuple[str, dict[str, Any]]]:
        """Every manager the BMC lists, with its body."""
        if self._managers is None:
            if "Managers" not in self.root():
                self._managers = []
            else:
                path = self.link(self.root(), "Managers", url=SERVICE_ROOT)
                self._managers = self.expanded_members(path)
        return self._managers

    def manager_path(self) -> str:
        """The manager of the system: found through ManagerForServers, else ManagedBy."""
        if self._manager_path is None:
            found = topology.manager_for(self.system_path(), self.system(), self.managers())
            if found is None:
                raise errors.ResourceMissing(self.transport.absolute(SERVICE_ROOT), "no manager")
            self._manager_path = found
        return self._manager_path

    def chassis_path(self) -> str | None:
        """The chassis of the system (Links.Chassis), else the first of Chassis, else None."""
        if self._chassis_path is None:
            chassis = (self.system().get("Links") or {}).get("Chassis") or []
            if chassis:
                found = [odata_id(chassis[0], self.transport.absolute(self.system_path()))]
            elif "Chassis" not in self.root():
                found = []
            else:
                found = self.members(self.link(self.root(), "Chassis", url=SERVICE_ROOT))
            self._chassis_path = found[0] if found else ""
        return self._chassis_path or None

    def chassis(self) -> dict[str, Any] | None:
        """The system's chassis, or None when the BMC has none (or it cannot be read)."""
        path = self.chassis_path()
        if not path:
            return None
        try:
            return self.get(path)
        except errors.ResourceMissing:
            return None

    def manufacturer(self) -> str:
        """The node's manufacturer, read once (quirks key on it)."""
        if self._manufacturer is None:
            system = self.system()
            chassis = None if system.get("Manufacturer") else self.chassis()
            self._manufacturer = topology.identity(system, chassis)["Manufacturer"]
        return self._manufacturer

    def vendor(self) -> str:
        """The BMC family whose quirks apply (quirks.vendor_of), read once."""
        if self._vendor is None:
            try:
                maker = self.manufacturer()
            except errors.RedfishError:
                maker = ""
            self._vendor = quirks.vendor_of(self.root(), maker)
        return self._vendor

    # -- readers ----------------------------------------------------------------------------

    def system_info(self) -> SystemInfo:
        """Identity, power and boot override of the system."""
        system = self.system()
        chassis = None
        if not all(system.get(f) for f in ("Manufacturer", "Model", "SerialNumber")):
            chassis = self.chassis()
        found = topology.identity(system, chassis)
        self._manufacturer = found["Manufacturer"]
        return SystemInfo(
            id=str(system.get("Id") or ""),
            odata_id=self.system_path(),
            manufacturer=self._manufacturer,
            model=found["Model"],
            serial=found["SerialNumber"],
            uuid=str(system.get("UUID") or ""),
            power_state=PowerState.parse(system.get("PowerState")),
            boot=_boot_of(system),
            bios_version=str(system.get("BiosVersion") or ""),
        )

    def power_state(self) -> PowerState:
        """The power state as read back now; UNKNOWN if the BMC cannot tell us."""
        try:
            return PowerState.parse(self.system().get("PowerState"))
        except errors.RedfishError:
            return PowerState.UNKNOWN

    def boot_override(self) -> BootOverride:
        """The boot source override as read back now, where the BMC keeps it (boot.read)."""
        return boot.read(self)

    def manager_info(self) -> dict[str, str]:
        """The manager's id, model and firmware version."""
        manager = self.get(self.manager_path())
        return {
            "id": str(manager.get("Id") or ""),
            "model": str(manager.get("Model") or ""),
            "firmware_version": str(manager.get("FirmwareVersion") or ""),
        }

    def ethernet_interfaces(self) -> list[dict[str, str]]:
        """The system's Ethernet interfaces: id, MAC address ("" when the BMC gives none that
        is a MAC), link status."""
        path = self.link(self.system(), "EthernetInterfaces", url=self.system_path())
        found = []
        for _, nic in self.expanded_members(path):
            mac = normalize_mac(nic.get("MACAddress")) or normalize_mac(
                nic.get("PermanentMACAddress")
            )
            found.append(
                {
                    "id": str(nic.get("Id") or ""),
                    "mac": mac or "",
                    "link_status": str(nic.get("LinkStatus") or ""),
                }
            )
        return found

    def mac_addresses(self) -> list[str]:
        """MAC addresses of the system's Ethernet interfaces, lower case, in BMC order."""
        return [nic["mac"] for nic in self.ethernet_interfaces() if nic["mac"]]

    def bios_attributes(self) -> dict[str, Any]:
        """The BIOS attributes in effect now (from /Bios, not its pending settings)."""
        return bios.current(self)

    def bios_pending(self) -> dict[str, Any]:
        """The BIOS attributes staged for the next reset (the @Redfish.Settings object)."""
        return bios.pending(self)

    def firmware_inventory(self) -> list[FirmwareItem]:
        """What firmware runs now, per component."""
        return firmware.inventory(self)

    def firmware_entries(self) -> list[FirmwareItem]:
        """Every firmware inventory entry, placed, running or not (backup, staging...)."""
        return firmware.entries(self)

    def component_integrity(self) -> list[IntegrityReport]:
        """What the BMC measured of the node's parts (SPDM, TPM); empty where it offers none."""
        return integrity.reports(self)

    def task_members(self) -> list[str]:
        """The task monitors the BMC's TaskService lists now (empty if it has none)."""
        return update_tracking.task_members(self)

    def task_status(self, monitor: str) -> TaskStatus:
        """One look at a task monitor (202 while running); never waits."""
        return update_tracking.task_status(self, monitor)

    # -- writers ----------------------------------------------------------------------------

    def allowed_reset_types(self) -> list[str]:
        """The ResetType values the system's Reset action allows."""
        system = self.system()
        action = (system.get("Actions") or {}).get("#ComputerSystem.Reset")
        if not action:
            raise errors.ActionNotSupported(
                self.transport.absolute(self.system_path()), "no ComputerSystem.Reset action"
            )
        allowed = action.get("ResetType@Redfish.AllowableValues")
        if allowed is None and action.get("@Redfish.ActionInfo"):
            info = self.get(action["@Redfish.ActionInfo"])
            for parameter in info.get("Parameters") or []:
                if parameter.get("Name") == "ResetType":
                    allowed = parameter.get("AllowableValues")
        if allowed is None:
            # Neither list nor ActionInfo: the DMTF base set is all we can assume.
            allowed = ["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart"]
        return list(allowed)

    def reset(self, action: PowerAction | str) -> Staged:
        """Ask for a power action with the best ResetType the BMC allows. Verify with
        power_state(): some firmware answers 204 and ignores the request."""
        action = PowerAction(action)
        allowed = self.allowed_reset_types()
        choice = next((t for t in RESET_PREFERENCES[action] if t in allowed), None)
        url = self.transport.absolute(self.system_path())
        if choice is None:
            raise errors.ActionNotSupported(
                url, f"no ResetType for {action.value} among the allowed {allowed}"
            )
        target = self.system()["Actions"]["#ComputerSystem.Reset"].get("target")
        if not target:
            raise errors.ActionNotSupported(url, "the Reset action has no target")
        answer = self.transport.request("POST", target, json={"ResetType": choice})
        return _staged(f"reset:{choice}", answer)

    def set_boot_override(
        self, target: str, *, once: bool = True, uefi: bool = True, http_boot_uri: str = ""
    ) -> Staged:
        """Stage a boot override (target "Pxe", "Cd", "UefiHttp", "Hdd"...), with the URI a
        UefiHttp boot fetches, where and how this BMC takes it; verify with boot_override()."""
        return boot.set_once(self, target, once=once, uefi=uefi, http_boot_uri=http_boot_uri)

    def set_bios_attributes(self, changes: dict[str, Any]) -> Staged:
        """Stage BIOS changes in the pending-settings object, applied at the next reset.
        Verify with bios_attributes() after that reset."""
        return bios.stage(self, changes)

    def update_firmware(
        self,
        *,
        image_uri: str | None = None,
        image: bytes | BinaryIO | None = None,
        open_image: firmware_update.ImageOpener | None = None,
        filename: str = "firmware.bin",
        targets: list[str] | None = None,
        kind: str = "",
    ) -> Staged:
        """Start a firmware update of component `kind` by SimpleUpdate (image_uri) or multipart
        push (image, or what open_image opens: fetched only if the push is needed). Follow it
        with update_tracking, then verify with firmware_inventory() after its activation."""
        return firmware_update.start(
            self,
            image_uri=image_uri,
            image=image,
            open_image=open_image,
            filename=filename,
            targets=targets,
            kind=kind,
        )

    def patch(self, path: str, body: dict[str, Any], *, etag: str | None = None) -> Answer:
        """PATCH with If-Match when the BMC gave an ETag, answering each ETag refusal its way.

        428 (XCC: If-Match required): read the ETag and send it. 412 on a weak ETag (iLO, AMI and
        XCC take only strong ones): the strong form, then no If-Match, as sushy does. 412 on a
        strong one, or with none: read the ETag afresh once. At most three sends.
        """
        tries = [etag]
        while True:
            current = tries[-1]
            headers = {"If-Match": current} if current else None
            try:
                return self.transport.request("PATCH", path, json=body, headers=headers)
            except errors.PreconditionRequired:
                if len(tries) >= 3:
                    raise
                fresh = strong_etag(self.get_answer(path).etag)
                if not fresh or fresh in tries:
                    raise
                tries.append(fresh)
            except errors.PreconditionFailed:
                if len(tries) >= 3:
                    raise
                if current and is_weak_etag(current) and strong_etag(current) not in tries:
                    tries.append(strong_etag(current))
                elif current and is_weak_etag(tries[0] or "") and None not in tries:
                    tries.append(None)
                else:
                    fresh = strong_etag(self.get_answer(path).etag)
                    if not fresh or fresh in tries:
                        raise
                    tries.append(fresh)


def _boot_of(system: dict[str, Any]) -> BootOverride:
    boot = system.get("Boot") or {}
    return BootOverride(
        target=str(boot.get("BootSourceOverrideTarget") or "None"),
        enabled=str(boot.get("BootSourceOverrideEnabled") or "Disabled"),
        mode=str(boot.get("BootSourceOverrideMode") or ""),
    )


def _staged(action: str, answer: Answer) -> Staged:
    monitor = answer.location if answer.status == 202 else None
    return Staged(
        action=action,
        url=answer.url,
        status=answer.status,
        task_monitor=monitor,
        detail=answer.body or {},
    )


__all__ = ["RedfishClient", "TaskState"]
