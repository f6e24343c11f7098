"""RedfishClient: one BMC, read by following links, written by actions the BMC says it allows.

Readers return plain data (models.py). Writers return a Staged receipt: a 2xx means the BMC
accepted the request, not that it happened, so every writer has a matching reader the caller
uses to verify. Nothing here sleeps for a long wait: task_status() is a single look.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from . import bios, errors, firmware, quirks
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


def odata_id(resource: dict[str, Any], url: str) -> str:
    """The @odata.id of a resource or link object; its absence is a typed error."""
    value = resource.get("@odata.id") if isinstance(resource, dict) else None
    if not value or not isinstance(value, str):
        raise errors.MissingOdataId(url, "a resource or link lacks its @odata.id")
    return value


def expand_query(root: dict[str, Any]) -> str | None:
    """The $expand query for one level of a collection's members, if the service root offers it."""
    offered = (root.get("ProtocolFeaturesSupported") or {}).get("ExpandQuery") or {}
    levels = "($levels=1)" if offered.get("Levels") else ""
    if offered.get("NoLinks"):
        return f"$expand=.{levels}"
    if offered.get("ExpandAll"):
        return f"$expand=*{levels}"
    return None


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
    ) -> None:
        self.transport = Transport(
            base_url,
            username,
            password,
            fingerprint=fingerprint,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            max_concurrency=max_concurrency,
        )
        self.use_sessions = use_sessions
        self._root: dict[str, Any] | None = None
        self._system_path: str | None = None
        self._manufacturer: str | None = None

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

    def system_path(self) -> str:
        """The path of the (first) computer system, found from the service root's Systems link."""
        if self._system_path is None:
            systems = self.link(self.root(), "Systems", url=SERVICE_ROOT)
            found = self.members(systems)
            if not found:
                raise errors.ResourceMissing(
                    self.transport.absolute(systems), "the Systems collection is empty"
                )
            self._system_path = found[0]
        return self._system_path

    def system(self) -> dict[str, Any]:
        """The raw ComputerSystem resource."""
        return self.get(self.system_path())

    def manager_path(self) -> str:
        """The manager of the system (Links.ManagedBy), else the first of Managers."""
        managed_by = (self.system().get("Links") or {}).get("ManagedBy") or []
        if managed_by:
            return odata_id(managed_by[0], self.transport.absolute(self.system_path()))
        found = self.members(self.link(self.root(), "Managers", url=SERVICE_ROOT))
        if not found:
            raise errors.ResourceMissing(self.transport.absolute(SERVICE_ROOT), "no manager")
        return found[0]

    def chassis_path(self) -> str | None:
        """The chassis of the system (Links.Chassis), else the first of Chassis, else None."""
        chassis = (self.system().get("Links") or {}).get("Chassis") or []
        if chassis:
            return odata_id(chassis[0], self.transport.absolute(self.system_path()))
        if "Chassis" not in self.root():
            return None
        found = self.members(self.link(self.root(), "Chassis", url=SERVICE_ROOT))
        return found[0] if found else None

    def manufacturer(self) -> str:
        """The system's manufacturer, read once (quirks key on it)."""
        if self._manufacturer is None:
            self._manufacturer = str(self.system().get("Manufacturer") or "")
        return self._manufacturer

    # -- readers ----------------------------------------------------------------------------

    def system_info(self) -> SystemInfo:
        """Identity, power and boot override of the system."""
        system = self.system()
        chassis = None
        if not system.get("SerialNumber"):
            path = self.chassis_path()
            chassis = self.get(path) if path else None
        self._manufacturer = str(system.get("Manufacturer") or "")
        return SystemInfo(
            id=str(system.get("Id") or ""),
            odata_id=self.system_path(),
            manufacturer=self._manufacturer,
            model=str(system.get("Model") or ""),
            serial=quirks.serial_number(system, chassis),
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
        """The boot source override as read back now."""
        return _boot_of(self.system())

    def manager_info(self) -> dict[str, str]:
        """The manager's id, model and firmware version."""
        manager = self.get(self.manager_path())
        return {
            "id": str(manager.get("Id") or ""),
            "model": str(manager.get("Model") or ""),
            "firmware_version": str(manager.get("FirmwareVersion") or ""),
        }

    def ethernet_interfaces(self) -> list[dict[str, str]]:
        """The system's Ethernet interfaces: id, MAC address, link status."""
        path = self.link(self.system(), "EthernetInterfaces", url=self.system_path())
        found = []
        for _, nic in self.expanded_members(path):
            mac = nic.get("MACAddress") or nic.get("PermanentMACAddress") or ""
            found.append(
                {
                    "id": str(nic.get("Id") or ""),
                    "mac": str(mac).lower(),
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

    def task_members(self) -> list[str]:
        """The task monitors the BMC's TaskService lists now (empty if it has none)."""
        return firmware.task_members(self)

    def task_status(self, monitor: str) -> TaskStatus:
        """One look at a task monitor (202 while running); never waits."""
        return firmware.task_status(self, monitor)

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

    def set_boot_override(self, target: str, *, once: bool = True, uefi: bool = True) -> Staged:
        """Stage a boot override (target "Pxe" or "Hdd"); verify with boot_override()."""
        system_answer = self.get_answer(self.system_path())
        boot = system_answer.body.get("Boot") or {} if system_answer.body else {}
        allowed = boot.get("BootSourceOverrideTarget@Redfish.AllowableValues")
        if allowed is not None and target not in allowed:
            raise errors.ActionNotSupported(
                system_answer.url, f"boot target {target!r} is not among the allowed {allowed}"
            )
        wanted: dict[str, Any] = {
            "BootSourceOverrideTarget": target,
            "BootSourceOverrideEnabled": "Once" if once else "Continuous",
        }
        if uefi and "BootSourceOverrideMode" in boot:
            wanted["BootSourceOverrideMode"] = "UEFI"
        answer = self.patch(self.system_path(), {"Boot": wanted}, etag=system_answer.etag)
        return _staged(f"boot:{target}:{wanted['BootSourceOverrideEnabled']}", answer)

    def set_bios_attributes(self, changes: dict[str, Any]) -> Staged:
        """Stage BIOS changes in the pending-settings object, applied at the next reset.
        Verify with bios_attributes() after that reset."""
        return bios.stage(self, changes)

    def update_firmware(
        self,
        *,
        image_uri: str | None = None,
        image: bytes | BinaryIO | None = None,
        filename: str = "firmware.bin",
        targets: list[str] | None = None,
    ) -> Staged:
        """Start a firmware update by SimpleUpdate (image_uri) or multipart push (image).
        Poll task_status() on the receipt's task_monitor, then verify with firmware_inventory()
        after the reset the component needs."""
        return firmware.update(
            self, image_uri=image_uri, image=image, filename=filename, targets=targets
        )

    def patch(self, path: str, body: dict[str, Any], *, etag: str | None = None) -> Answer:
        """PATCH with If-Match when the BMC gave an ETag; one re-read on 412."""
        headers = {"If-Match": etag} if etag else None
        try:
            return self.transport.request("PATCH", path, json=body, headers=headers)
        except errors.PreconditionFailed:
            if etag is None:
                # The BMC demands If-Match and the caller had none: read the ETag and retry once.
                fresh = self.get_answer(path).etag
                if fresh:
                    return self.transport.request(
                        "PATCH", path, json=body, headers={"If-Match": fresh}
                    )
            raise


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


__all__ = ["RedfishClient", "TaskState", "odata_id"]
