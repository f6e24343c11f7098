"""The one-time boot override, written where and how each BMC takes it, and read back there.

Standard Redfish puts it in the system's `Boot`. A BMC with a `@Redfish.Settings` object that
carries `Boot` (DGX H100 `/SD`, GB200/GH200/BlueField `/Settings`, iDRAC 10) takes it there and
reports it there until the next reset; each property goes where the BMC advertises it, as sushy
does. What no payload declares (Dell's virtual-CD boot, Supermicro's UsbCd) is a quirk row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import bios, errors, quirks
from .models import BootOverride, Staged

if TYPE_CHECKING:
    from .client import RedfishClient

# Boot targets that mean "the virtual CD" when Greenlight boots its ephemeral ISO.
VIRTUAL_CD = "Cd"
DELL_IMPORT_ACTION = "ImportSystemConfiguration"
# Dell's one-time boot to the virtual CD, as sushy's Dell OEM sends it (no whitespace: the iDRAC
# job fails on insignificant whitespace, sushy/oem/dell/resources/manager/manager.py).
DELL_VCD_BOOT = (
    '<SystemConfiguration><Component FQDD="{manager}">'
    '<Attribute Name="ServerBoot.1#BootOnce">Enabled</Attribute>'
    '<Attribute Name="ServerBoot.1#FirstBootDevice">VCD-DVD</Attribute>'
    "</Component></SystemConfiguration>"
)


@dataclass(frozen=True)
class BootPlace:
    """Where the Boot properties live: the system, and its settings object if it carries Boot."""

    system_path: str
    system_boot: dict[str, Any]
    system_etag: str | None
    settings_path: str | None = None
    settings_boot: dict[str, Any] | None = None
    settings_etag: str | None = None

    def where(self, name: str) -> str:
        """The resource a Boot property is written to: the settings object where it carries it."""
        if self.settings_path and self.settings_boot is not None and name in self.settings_boot:
            return self.settings_path
        return self.system_path

    def boot_of(self, path: str) -> dict[str, Any]:
        if path == self.settings_path and self.settings_boot is not None:
            return self.settings_boot
        return self.system_boot

    def etag_of(self, path: str) -> str | None:
        return self.settings_etag if path == self.settings_path else self.system_etag

    def allowed(self, name: str) -> list[str] | None:
        """AllowableValues of a Boot property: what every list the BMC gives allows (the
        BlueField's settings object lists Cd and Hdd, its system, rightly, neither)."""
        key = f"{name}@Redfish.AllowableValues"
        lists = [
            [str(v) for v in boot[key]]
            for boot in (self.system_boot, self.settings_boot or {})
            if isinstance(boot.get(key), list)
        ]
        if not lists:
            return None
        return [v for v in lists[0] if all(v in other for other in lists[1:])]


def place(client: RedfishClient) -> BootPlace:
    """Read the system and, when it names one, its settings object."""
    path = client.system_path()
    answer = client.get_answer(path)
    system = answer.body or {}
    found = BootPlace(path, dict(system.get("Boot") or {}), answer.etag)
    annotation = system.get("@Redfish.Settings")
    target = (annotation or {}).get("SettingsObject") if isinstance(annotation, dict) else None
    if not isinstance(target, dict) or not target.get("@odata.id"):
        return found
    settings_path = str(target["@odata.id"])
    try:
        settings = client.get_answer(settings_path)
    except (errors.ResourceMissing, errors.NotJson, errors.ActionNotSupported):
        return found
    boot = (settings.body or {}).get("Boot")
    if not isinstance(boot, dict):
        return found
    return BootPlace(
        path,
        found.system_boot,
        found.system_etag,
        settings_path=settings_path,
        settings_boot=dict(boot),
        settings_etag=settings.etag,
    )


def effective_target(target: str, vendor: str, allowed: list[str] | None) -> str:
    """The target to ask for: Supermicro boots its virtual CD only as UsbCd (Cd is the physical
    drive), where it lists UsbCd (quirk row supermicro / virtual-media boot)."""
    if target == VIRTUAL_CD and vendor == "supermicro" and allowed and "UsbCd" in allowed:
        return "UsbCd"
    return target


def dell_virtual_cd_action(manager: dict[str, Any]) -> str | None:
    """The target of the iDRAC's ImportSystemConfiguration action, or None if it has none."""
    oem = ((manager.get("Actions") or {}).get("Oem")) or {}
    for name, action in oem.items():
        if name.endswith(DELL_IMPORT_ACTION) and isinstance(action, dict) and action.get("target"):
            return str(action["target"])
    return None


def set_once(
    client: RedfishClient,
    target: str,
    *,
    once: bool = True,
    uefi: bool = True,
    http_boot_uri: str = "",
) -> Staged:
    """Stage a boot override (target "Pxe", "Cd", "UefiHttp", "Hdd"...); verify with read()."""
    vendor = client.vendor()
    if target == VIRTUAL_CD and once and vendor == "dell":
        manager = client.get(client.manager_path())
        action = dell_virtual_cd_action(manager)
        if action:
            return _dell_virtual_cd(client, action, str(manager.get("Id") or "iDRAC.Embedded.1"))
    found = place(client)
    allowed_targets = found.allowed("BootSourceOverrideTarget")
    wanted_target = effective_target(target, vendor, allowed_targets)
    if allowed_targets is not None and wanted_target not in allowed_targets:
        raise errors.ActionNotSupported(
            client.transport.absolute(found.system_path),
            f"boot target {wanted_target!r} is not among the allowed {allowed_targets}",
        )
    enabled = "Once" if once else "Continuous"
    allowed_enabled = found.allowed("BootSourceOverrideEnabled")
    if allowed_enabled is not None and enabled not in allowed_enabled:
        raise errors.ActionNotSupported(
            client.transport.absolute(found.system_path),
            f"BootSourceOverrideEnabled {enabled!r} is not among the allowed {allowed_enabled}",
        )
    writes: dict[str, dict[str, Any]] = {}

    def put(name: str, value: Any) -> None:
        writes.setdefault(found.where(name), {})[name] = value

    put("BootSourceOverrideTarget", wanted_target)
    put("BootSourceOverrideEnabled", enabled)
    mode_path = found.where("BootSourceOverrideMode")
    current_mode = found.boot_of(mode_path).get("BootSourceOverrideMode", _ABSENT)
    # Only a mode that differs is written: on iDRAC every mode write queues a BIOS job that
    # collides with a pending BIOS-settings job (LC068; quirk row dell / boot override).
    if uefi and current_mode is not _ABSENT and current_mode != "UEFI":
        allowed_modes = found.allowed("BootSourceOverrideMode")
        if allowed_modes is None or "UEFI" in allowed_modes:
            put("BootSourceOverrideMode", "UEFI")
    staged_bios: dict[str, Any] = {}
    if http_boot_uri:
        if _advertises(found, "HttpBootUri"):
            put("HttpBootUri", http_boot_uri)
        else:
            staged_bios = stage_http_boot_uri(client, vendor, http_boot_uri)
    answer = None
    for path, boot in writes.items():
        answer = client.patch(path, {"Boot": boot}, etag=found.etag_of(path))
    assert answer is not None
    return Staged(
        action=f"boot:{wanted_target}:{enabled}",
        url=answer.url,
        status=answer.status,
        task_monitor=None,
        detail={"written_to": sorted(writes), "bios": staged_bios},
    )


_ABSENT = object()

# Where Dell and HPE take the UEFI HTTP boot URI: a BIOS attribute, applied at the next reset
# (quirk rows dell / hpe, UEFI HTTP boot).
HTTP_BOOT_BIOS = {
    "dell": lambda uri: {"HttpDev1EnDis": "Enabled", "HttpDev1Uri": uri},
    "hpe": lambda uri: {"UrlBootFile": uri},
}


def stage_http_boot_uri(client: RedfishClient, vendor: str, uri: str) -> dict[str, Any]:
    """Stage the HTTP boot URI as the vendor's BIOS attributes; what was staged ({} if already
    in effect). A BMC with neither Boot.HttpBootUri nor such attributes cannot take a URI."""
    attributes = HTTP_BOOT_BIOS.get(vendor, lambda _uri: {})(uri)
    current = bios.current(client) if attributes else {}
    if not attributes or not set(attributes) <= set(current):
        raise errors.ActionNotSupported(
            client.transport.absolute(client.system_path()),
            "this BMC has no Boot.HttpBootUri and no BIOS attribute for the HTTP boot URI",
        )
    delta = {k: v for k, v in attributes.items() if current.get(k) != v}
    if delta:
        bios.stage(client, delta)
    return delta


def _advertises(found: BootPlace, name: str) -> bool:
    return name in found.system_boot or name in (found.settings_boot or {})


def _dell_virtual_cd(client: RedfishClient, action: str, manager_id: str) -> Staged:
    body = {
        "ShareParameters": {"Target": ["ALL"]},
        "ImportBuffer": DELL_VCD_BOOT.format(manager=manager_id),
    }
    answer = client.transport.request("POST", action, json=body)
    return Staged(
        action=f"boot:{VIRTUAL_CD}:Once",
        url=answer.url,
        status=answer.status,
        task_monitor=answer.location if answer.status == 202 else None,
        detail={"dell_oem": "VCD-DVD"},
    )


def read(client: RedfishClient) -> BootOverride:
    """The override as read back: from the settings object where the BMC takes it there (it
    shows there until the next reset), else from the system."""
    found = place(client)
    path = found.where("BootSourceOverrideTarget")
    return _override_of(found.boot_of(path))


def read_back_differs(client: RedfishClient, target: str) -> str | None:
    """None when the override reads back as `target` once (UsbCd standing for Cd on
    Supermicro); else what it reads back instead, in words."""
    found = place(client)
    override = _override_of(found.boot_of(found.where("BootSourceOverrideTarget")))
    wanted = effective_target(target, client.vendor(), found.allowed("BootSourceOverrideTarget"))
    if override.target == wanted and override.enabled in quirks.ONCE_READS_BACK:
        return None
    return f"boot override reads back {override.target} ({override.enabled}), not {wanted} once"


def _override_of(boot: dict[str, Any]) -> BootOverride:
    return BootOverride(
        target=str(boot.get("BootSourceOverrideTarget") or "None"),
        enabled=str(boot.get("BootSourceOverrideEnabled") or "Disabled"),
        mode=str(boot.get("BootSourceOverrideMode") or ""),
    )
