"""What a Redfish capture declares about the writes it takes, checked against recorded requests.

Written from the Redfish specification (DSP0266: ActionInfo Parameters with Required and
AllowableValues, `X@Redfish.AllowableValues` on an action, `@Redfish.Settings` SettingsObject and
SupportedApplyTimes, If-Match with the resource's ETag; DSP0268 UpdateService MultipartHttpPushUri
with UpdateParameters) and the capture's own bodies, never from Greenlight's client: it reads the
capture's files, not the client's view of them. Vendor rules that no declaration carries are
named where they are checked, with their source.

Each check returns a list of problems, empty when the requests honour the capture.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

PREFIX = "/redfish/v1"
CD_TYPES = {"CD", "DVD"}
# Dell iDRAC boots its virtual CD only through the OEM SCP import with FirstBootDevice VCD-DVD
# (sushy oem/dell/resources/manager/manager.py set_virtual_boot_device; Ironic's redfish
# virtual-media boot, Dell note); the capture declares the action on the manager.
DELL_IMPORT = "ImportSystemConfiguration"


def norm(path: str) -> str:
    """A path as the service matches it: decoded, no query or fragment, no trailing slash, any case
    (iLO links in lower case to resources it names in mixed case)."""
    return unquote(path.split("#", 1)[0].split("?", 1)[0]).rstrip("/").lower()


def strong(etag: str) -> str:
    return etag[2:] if etag.startswith(("W/", "w/")) else etag


def header(request: dict[str, Any], name: str) -> str | None:
    for key, value in (request.get("headers") or {}).items():
        if key.lower() == name.lower():
            return value
    return None


class Capture:
    """A capture folder read as a service: each body by its path."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.bodies: dict[str, dict[str, Any]] = {}
        for file in folder.rglob("index.json"):
            relative = file.parent.relative_to(folder).as_posix()
            path = PREFIX if relative == "." else f"{PREFIX}/{relative}"
            self.bodies.setdefault(norm(path), json.loads(file.read_text()))

    def get(self, link: Any) -> dict[str, Any] | None:
        if isinstance(link, dict):
            link = link.get("@odata.id")
        return self.bodies.get(norm(link)) if isinstance(link, str) else None

    def members(self, link: Any) -> list[tuple[str, dict[str, Any]]]:
        collection = self.get(link) or {}
        out = []
        for member in collection.get("Members") or []:
            body = self.get(member)
            if body is not None:
                out.append((member["@odata.id"], body))
        return out

    @property
    def root(self) -> dict[str, Any]:
        return self.bodies[norm(PREFIX)]

    def node(self) -> tuple[str, dict[str, Any]]:
        """The node's system: the first the Systems collection lists (every capture lists its
        host first: DGX, System_0 before HGX_Baseboard_0; Node0 on the Cray blade)."""
        return self.members(self.root["Systems"])[0]

    def settings_object(self, resource: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        annotation = resource.get("@Redfish.Settings") or {}
        link = annotation.get("SettingsObject") if isinstance(annotation, dict) else None
        body = self.get(link)
        return (link["@odata.id"], body) if body is not None else None

    def managers(self) -> list[tuple[str, dict[str, Any]]]:
        return self.members(self.root["Managers"]) if "Managers" in self.root else []

    def virtual_cds(self) -> list[tuple[str, dict[str, Any]]]:
        """VirtualMedia devices that take a CD: MediaTypes says CD or DVD, or says nothing."""
        owners = [self.node()[1]] + [body for _, body in self.managers()]
        found = []
        for owner in owners:
            for path, media in self.members(owner.get("VirtualMedia")):
                types = set(media.get("MediaTypes") or [])
                if (types & CD_TYPES or not types) and norm(path) not in {
                    norm(p) for p, _ in found
                }:
                    found.append((path, media))
        return found

    def update_service(self) -> dict[str, Any]:
        return self.get(self.root.get("UpdateService")) or {}

    def dell_import_target(self) -> str | None:
        for _, manager in self.managers():
            for name, action in ((manager.get("Actions") or {}).get("Oem") or {}).items():
                if name.endswith(DELL_IMPORT) and isinstance(action, dict):
                    return action.get("target")
        return None


# -- parameters an action declares ----------------------------------------------------------


def declared_parameters(
    capture: Capture, action: dict[str, Any]
) -> dict[str, dict[str, Any]] | None:
    """The action's parameters by name from its ActionInfo (None when it names none)."""
    info = capture.get(action.get("@Redfish.ActionInfo"))
    if info is None:
        return None
    return {p["Name"]: p for p in info.get("Parameters") or [] if isinstance(p, dict)}


def allowed(value: Any, allowable: list[Any]) -> bool:
    """Whether a value is within AllowableValues (Supermicro writes some entries as patterns)."""
    for entry in allowable:
        if value == entry:
            return True
        if isinstance(value, str) and isinstance(entry, str) and "(" in entry:
            if re.fullmatch(entry, value):
                return True
    return False


def check_parameters(
    capture: Capture, action: dict[str, Any], body: dict[str, Any], what: str
) -> list[str]:
    problems = []
    parameters = declared_parameters(capture, action)
    if parameters is not None:
        for name in body:
            if name not in parameters:
                problems.append(f"{what}: {name} is not a parameter its ActionInfo lists")
        for name, parameter in parameters.items():
            if parameter.get("Required") and name not in body:
                problems.append(f"{what}: required parameter {name} is missing")
    for name, value in body.items():
        lists = []
        if parameters and isinstance(parameters.get(name, {}).get("AllowableValues"), list):
            lists.append(parameters[name]["AllowableValues"])
        if isinstance(action.get(f"{name}@Redfish.AllowableValues"), list):
            lists.append(action[f"{name}@Redfish.AllowableValues"])
        values = value if isinstance(value, list) else [value]
        for allowable in lists:
            for item in values:
                if not allowed(item, allowable):
                    problems.append(f"{what}: {name}={item!r} is not among {allowable}")
    return list(dict.fromkeys(problems))  # an ActionInfo and an annotation may say it twice


def check_if_match(request: dict[str, Any], resource: dict[str, Any], what: str) -> list[str]:
    """A PATCH of a resource with an ETag carries it (or its strong form) in If-Match."""
    etag = resource.get("@odata.etag")
    if not etag:
        return []
    sent = header(request, "If-Match")
    if sent is None:
        return [f"{what}: no If-Match, though the resource has ETag {etag}"]
    if strong(sent) != strong(etag):
        return [f"{what}: If-Match {sent} is not the resource's ETag {etag}"]
    return []


def writes(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in requests if r["method"] not in ("GET", "HEAD")]


# -- boot ------------------------------------------------------------------------------------


def boot_refusal(capture: Capture, target: str) -> str | None:
    """The word a refusal must name when the capture cannot boot `target` once, else None."""
    _, system = capture.node()
    boot = system.get("Boot") or {}
    if not boot:
        return "Boot"
    if target == "Cd" and capture.dell_import_target():
        return None
    allowable = _boot_allowable(capture, system, "BootSourceOverrideTarget")
    wanted = _wanted_target(target, allowable)
    if allowable is not None and wanted not in allowable:
        return wanted
    return None


def _boot_allowable(capture: Capture, system: dict[str, Any], name: str) -> list[str] | None:
    """The values allowed for a Boot property: those every list (system, settings object)
    allows, where either lists any; None where neither does."""
    key = f"{name}@Redfish.AllowableValues"
    settings = capture.settings_object(system)
    lists = [
        boot[key]
        for boot in (system.get("Boot") or {}, (settings[1].get("Boot") or {}) if settings else {})
        if isinstance(boot.get(key), list)
    ]
    if not lists:
        return None
    return [value for value in lists[0] if all(value in other for other in lists[1:])]


def boot_place(capture: Capture, system_path: str, system: dict[str, Any], name: str):
    """Where a Boot property is written: the @Redfish.Settings object where it carries that
    property (DSP0266 "Settings": pending values are PATCHed there; DGX H100's SD, GB200's
    Settings), else the system (XCC's Pending object carries only BootOrder)."""
    settings = capture.settings_object(system)
    if settings and name in (settings[1].get("Boot") or {}):
        return settings
    return system_path, system


def _wanted_target(target: str, allowable: list[str] | None) -> str:
    # Supermicro lists UsbCd beside Cd: Cd is the physical drive there, UsbCd the virtual CD
    # (capture supermicro-hgx-sys821ge; sushy main/resources/system/system.py UsbCd handling).
    if target == "Cd" and allowable and "UsbCd" in allowable:
        return "UsbCd"
    return target


def check_boot(capture: Capture, requests: list[dict[str, Any]], target: str) -> list[str]:
    """A one-time boot of `target` as the capture's system declares it takes one."""
    system_path, system = capture.node()
    sent = writes(requests)
    dell_import = capture.dell_import_target()
    if target == "Cd" and dell_import:
        return _check_dell_virtual_cd(sent, dell_import)
    patches = [r for r in sent if r["method"] == "PATCH" and "Boot" in (r["body"] or {})]
    problems = [f"unexpected write {r['method']} {r['path']}" for r in sent if r not in patches]
    if not patches:
        return problems + ["no PATCH carries Boot"]
    current = system.get("Boot") or {}
    target_allowable = _boot_allowable(capture, system, "BootSourceOverrideTarget")
    wanted = _wanted_target(target, target_allowable)
    for request in patches:
        what = f"PATCH {request['path']}"
        boot = request["body"]["Boot"]
        places = {name: boot_place(capture, system_path, system, name) for name in boot}
        for name, (place_path, _) in places.items():
            if norm(request["path"]) != norm(place_path):
                problems.append(f"{what}: {name} is written at {place_path}")
        place = next(iter(places.values()), (system_path, system))[1]
        if "BootSourceOverrideTarget" in boot and boot["BootSourceOverrideTarget"] != wanted:
            problems.append(f"{what}: target {boot['BootSourceOverrideTarget']!r}, not {wanted!r}")
        for name in (
            "BootSourceOverrideTarget",
            "BootSourceOverrideEnabled",
            "BootSourceOverrideMode",
        ):
            allowable = _boot_allowable(capture, system, name)
            if name in boot and allowable is not None and boot[name] not in allowable:
                problems.append(f"{what}: {name}={boot[name]!r} is not among {allowable}")
        if boot.get("BootSourceOverrideEnabled", "Once") != "Once":
            problems.append(f"{what}: BootSourceOverrideEnabled is not Once")
        # A mode the system already reads is not sent again: on iDRAC every mode write queues a
        # BIOS job (LC068 against a pending one; sushy tests/oem/dell error_pending_job.json).
        if "BootSourceOverrideMode" in boot and current.get("BootSourceOverrideMode") == "UEFI":
            problems.append(f"{what}: sends BootSourceOverrideMode though it already reads UEFI")
        problems += check_if_match(request, place, what)
    written = {k for r in patches for k in r["body"]["Boot"]}
    for name in ("BootSourceOverrideTarget", "BootSourceOverrideEnabled"):
        if name not in written:
            problems.append(f"no PATCH sets {name}")
    return problems


def _check_dell_virtual_cd(sent: list[dict[str, Any]], action: str) -> list[str]:
    posts = [r for r in sent if r["method"] == "POST" and norm(r["path"]) == norm(action)]
    problems = [f"unexpected write {r['method']} {r['path']}" for r in sent if r not in posts]
    if len(posts) != 1:
        return problems + [f"the virtual-CD boot is one POST to {action}, found {len(posts)}"]
    body = posts[0]["body"] or {}
    buffer = str(body.get("ImportBuffer") or "")
    if "VCD-DVD" not in buffer or "BootOnce" not in buffer:
        problems.append("the ImportBuffer does not set BootOnce to VCD-DVD")
    if not (body.get("ShareParameters") or {}).get("Target"):
        problems.append("ShareParameters.Target is missing")
    return problems


# -- virtual media ----------------------------------------------------------------------------


def check_insert(capture: Capture, requests: list[dict[str, Any]], image: str) -> list[str]:
    """An insert of `image` into one of the capture's virtual CDs, as that CD declares it."""
    sent = writes(requests)
    problems: list[str] = []
    inserts = []
    for request in sent:
        cd = _cd_written(capture, request)
        if cd is None:
            problems.append(f"unexpected write {request['method']} {request['path']}")
        elif cd[2] == "insert":
            inserts.append((request, cd[0], cd[1]))
    if len(inserts) != 1:
        return problems + [f"one insert into a virtual CD expected, found {len(inserts)}"]
    request, path, media = inserts[0]
    body = request["body"] or {}
    what = f"{request['method']} {request['path']}"
    if body.get("Image") != image:
        problems.append(f"{what}: Image is {body.get('Image')!r}, not {image!r}")
    action = (media.get("Actions") or {}).get("#VirtualMedia.InsertMedia")
    if request["method"] == "POST":
        problems += check_parameters(capture, action, body, what)
    else:
        if body.get("Inserted") is not True:
            problems.append(f"{what}: a PATCH insert sets Inserted true")
        # XCC answers 428 to a PATCH without If-Match (issue 29; Lenovo XCC Redfish guide): its
        # CDs carry an ETag, which check_if_match demands.
        problems += check_if_match(request, media, what)
    return problems


def _cd_written(
    capture: Capture, request: dict[str, Any]
) -> tuple[str, dict[str, Any], str] | None:
    """Which CD a write goes to and whether it inserts or ejects; None for any other write."""
    for path, media in capture.virtual_cds():
        actions = media.get("Actions") or {}
        insert = actions.get("#VirtualMedia.InsertMedia") or {}
        eject = actions.get("#VirtualMedia.EjectMedia") or {}
        if request["method"] == "POST" and norm(request["path"]) == norm(
            insert.get("target") or "-"
        ):
            return path, media, "insert"
        if request["method"] == "POST" and norm(request["path"]) == norm(
            eject.get("target") or "-"
        ):
            return path, media, "eject"
        if request["method"] == "PATCH" and norm(request["path"]) == norm(path):
            # Only a CD with no InsertMedia action takes its medium by PATCH (VirtualMedia 1.0).
            inserting = (request["body"] or {}).get("Inserted") is not False
            if insert and inserting:
                return None
            return path, media, "insert" if inserting else "eject"
    return None


# -- firmware ---------------------------------------------------------------------------------


def firmware_refusal(capture: Capture, by_file: bool) -> str | None:
    """The word a refusal must name when the capture offers no way to update, else None."""
    service = capture.update_service()
    simple = (service.get("Actions") or {}).get("#UpdateService.SimpleUpdate")
    if by_file and not service.get("MultipartHttpPushUri"):
        return "multipart"
    if not by_file and not simple:
        return "SimpleUpdate"
    return None


def simple_update_protocols(capture: Capture) -> list[str] | None:
    """The TransferProtocol values SimpleUpdate allows, where it lists them."""
    action = (capture.update_service().get("Actions") or {}).get(
        "#UpdateService.SimpleUpdate"
    ) or {}
    parameters = declared_parameters(capture, action) or {}
    listed = (parameters.get("TransferProtocol") or {}).get("AllowableValues")
    return listed or action.get("TransferProtocol@Redfish.AllowableValues")


def check_simple_update(
    capture: Capture, requests: list[dict[str, Any]], image_uri: str
) -> list[str]:
    """A SimpleUpdate of `image_uri` with only what its ActionInfo and annotations allow."""
    action = (capture.update_service().get("Actions") or {}).get(
        "#UpdateService.SimpleUpdate"
    ) or {}
    sent = writes(requests)
    posts = [
        r
        for r in sent
        if r["method"] == "POST" and norm(r["path"]) == norm(action.get("target") or "-")
    ]
    problems = [f"unexpected write {r['method']} {r['path']}" for r in sent if r not in posts]
    if len(posts) != 1:
        return problems + [f"one SimpleUpdate POST expected, found {len(posts)}"]
    body = posts[0]["body"] or {}
    what = f"SimpleUpdate {posts[0]['path']}"
    if body.get("ImageURI") != image_uri:
        problems.append(f"{what}: ImageURI is {body.get('ImageURI')!r}")
    problems += check_parameters(capture, action, body, what)
    protocol = body.get("TransferProtocol")
    scheme = image_uri.split(":", 1)[0].upper()
    if protocol is not None and protocol != scheme:
        problems.append(f"{what}: TransferProtocol {protocol} does not match the URI's {scheme}")
    if not isinstance(body.get("Targets", []), list):
        problems.append(f"{what}: Targets is not a list")
    return problems


def check_multipart(
    capture: Capture, requests: list[dict[str, Any]], filename: str, size: int
) -> list[str]:
    """A multipart push of one file with UpdateParameters, to MultipartHttpPushUri."""
    service = capture.update_service()
    push = service.get("MultipartHttpPushUri") or "-"
    sent = writes(requests)
    posts = [r for r in sent if r["method"] == "POST" and norm(r["path"]) == norm(push)]
    problems = [f"unexpected write {r['method']} {r['path']}" for r in sent if r not in posts]
    if len(posts) != 1:
        return problems + [f"one POST to {push} expected, found {len(posts)}"]
    request = posts[0]
    body = request["body"] or {}
    if not str(header(request, "Content-Type") or "").startswith("multipart/form-data"):
        problems.append("the push is not multipart/form-data")
    if not isinstance(body.get("UpdateParameters"), dict):
        problems.append("UpdateParameters is not a JSON object")
    files = [v for v in body.values() if isinstance(v, dict) and "filename" in v]
    if [(f["filename"], f["size"]) for f in files] != [(filename, size)]:
        problems.append(f"the file parts are {files}, not one {filename} of {size} bytes")
    limit = service.get("MaxImageSizeBytes")
    if isinstance(limit, int) and size > limit:
        problems.append(f"{size} bytes exceed MaxImageSizeBytes {limit}")
    return problems


# -- BIOS -------------------------------------------------------------------------------------


def bios_refusal(capture: Capture) -> str | None:
    """The word a refusal must name when BIOS changes cannot be staged, else None."""
    _, system = capture.node()
    bios = capture.get(system.get("Bios"))
    if bios is None:
        return "BIOS"
    if capture.settings_object(bios) is None:
        return "@Redfish.Settings"
    return None


def bios_attribute(capture: Capture) -> tuple[str, Any] | None:
    """One attribute the capture's Bios has, with a plain value, to stage as it is."""
    _, system = capture.node()
    bios = capture.get(system.get("Bios")) or {}
    for name, value in (bios.get("Attributes") or {}).items():
        if isinstance(value, str | int | bool) and not isinstance(value, float):
            return name, value
    return None


def check_bios(
    capture: Capture, requests: list[dict[str, Any]], name: str, value: Any
) -> list[str]:
    """A PATCH of the Bios settings object with the attribute, and an ApplyTime it supports."""
    _, system = capture.node()
    bios = capture.get(system.get("Bios")) or {}
    settings = capture.settings_object(bios)
    assert settings is not None
    path, body_of_settings = settings
    sent = writes(requests)
    patches = [r for r in sent if r["method"] == "PATCH" and norm(r["path"]) == norm(path)]
    problems = [f"unexpected write {r['method']} {r['path']}" for r in sent if r not in patches]
    if len(patches) != 1:
        return problems + [f"one PATCH of {path} expected, found {len(patches)}"]
    request = patches[0]
    body = request["body"] or {}
    what = f"PATCH {request['path']}"
    if body.get("Attributes") != {name: value}:
        problems.append(f"{what}: Attributes {body.get('Attributes')}, not {{{name!r}: {value!r}}}")
    apply_time = (body.get("@Redfish.SettingsApplyTime") or {}).get("ApplyTime")
    supported = (bios.get("@Redfish.Settings") or {}).get("SupportedApplyTimes")
    if apply_time is not None and supported is not None and apply_time not in supported:
        problems.append(f"{what}: ApplyTime {apply_time} is not among {supported}")
    problems += check_if_match(request, body_of_settings, what)
    return problems
