"""The golden manifest schema: YAML in, a validated spec out, errors keyed to line and field."""

from __future__ import annotations

import re
from typing import Any

from .choices import FIRMWARE_TARGETS, EphemeralBoot
from .documents import (
    SEMVER,
    SHA256,
    DocumentInvalid,
    ParsedDocument,
    SchemaChecker,
    load_lined_yaml,
    next_version,
    replace_version,
)
from .measured_boot import parse_attestation
from .rack_stages import parse_rack_stages

__all__ = ["DocumentInvalid", "parse_manifest", "next_version", "replace_version"]

URL = re.compile(r"^(https?|file)://\S+$")
TOP_LEVEL = {
    "sku",
    "version",
    "description",
    "firmware",
    "bios_settings",
    "boot_order",
    "os_image",
    "ephemeral",
    "acceptance_profile",
    "timeouts",
    "attestation",
    "rack_stages",
}


def _artifact(
    check: SchemaChecker, value: Any, path: tuple, *, signed: bool, versioned: bool = True
) -> dict | None:
    block = check.mapping(value, path)
    if block is None:
        return None
    allowed = {"version", "url", "sha256"} | ({"signature"} if signed else set())
    check.unknown_keys(block, allowed, path)
    out = {
        "version": check.string(block, "version", path, required=versioned and not signed),
        "url": check.string(block, "url", path, pattern=URL, hint="an http(s) or file URL"),
        "sha256": check.string(
            block, "sha256", path, pattern=SHA256, hint="64 lowercase hex digits"
        ),
    }
    if signed:
        out["signature"] = check.string(block, "signature", path)
    return {k: v for k, v in out.items() if v is not None}


DEVICE = re.compile(r"^/dev/[A-Za-z0-9._/-]+$")


def _os_image(check: SchemaChecker, value: Any) -> dict | None:
    """The signed OS image, and optionally the disk it goes on (else the agent's default)."""
    path = ("os_image",)
    block = check.mapping(value, path)
    if block is None:
        return None
    disk = check.string(block, "disk", path, required=False, pattern=DEVICE, hint="a /dev path")
    artifact = _artifact(check, {k: v for k, v in block.items() if k != "disk"}, path, signed=True)
    if artifact is None:
        return None
    return artifact | ({"disk": disk} if disk else {})


def _ephemeral(check: SchemaChecker, value: Any) -> dict | None:
    """How the ephemeral environment boots, and the media each boot method needs."""
    path = ("ephemeral",)
    block = check.mapping(value, path)
    if block is None:
        return None
    check.unknown_keys(block, {"boot", "iso", "kernel", "initrd"}, path)
    methods = [str(m) for m in EphemeralBoot.values]
    boot = check.string(block, "boot", path, required=False) or EphemeralBoot.PXE
    if boot not in methods:
        check.error(
            path + ("boot",), f"unknown boot method {boot!r}; expected one of {', '.join(methods)}"
        )
        return None
    out: dict[str, Any] = {"boot": boot}
    needs = ("kernel", "initrd") if boot == EphemeralBoot.PXE else ("iso",)
    for name in ("iso", "kernel", "initrd"):
        if name not in block:
            if name in needs:
                check.error(path + (name,), f"{boot} boot needs the {name}'s url and sha256")
            continue
        artifact = _artifact(check, block[name], path + (name,), signed=False, versioned=False)
        if artifact is not None:
            out[name] = artifact
    return out


# Sub-components of a firmware kind a target can name in `parts` (which inventory entries carry
# the target's version). The HGX tray's bundle sets its HMC, GPUs, NVSwitches, ERoTs and more,
# and the HMC's version is the bundle's; a BIOS entry is not its Intel ME. Provisioning's
# vendor naming table (provisioning/redfish/naming.py) places entries into these.
FIRMWARE_PARTS = (
    "bmc", "bios", "hmc", "gpu", "nvswitch", "erot", "fpga", "retimer", "pcie_switch",
    "cpld", "cpu", "nic", "dpu", "dpu_software", "drive", "storage_controller", "psu", "tpm",
    "me", "capsule", "driver_pack", "diagnostics", "lifecycle", "service_module",
    "provisioning", "inforom", "backplane", "video", "platform_data", "baseboard", "unknown",
)  # fmt: skip
# The parts a kind's target manages when it names none.
DEFAULT_PARTS = {
    "bmc": ("bmc",),
    "bios": ("bios",),
    "hgx": ("hmc", "baseboard"),
    "nic": ("nic",),
    "dpu": ("dpu",),
    "nvme": ("drive",),
}


def _firmware_target(check: SchemaChecker, component: str, spec: Any, path: tuple) -> dict | None:
    """One kind's target: an artifact, optionally for one `model` and the `parts` it manages,
    with `models`: other models of the same kind (two NVMe drive models) and their artifacts."""
    block = check.mapping(spec, path)
    if block is None:
        return None
    extra = {k: block[k] for k in ("model", "parts", "models") if k in block}
    artifact = _artifact(check, {k: v for k, v in block.items() if k not in extra}, path,
                         signed=False)  # fmt: skip
    if artifact is None:
        return None
    if "model" in extra:
        model = check.string(block, "model", path)
        if model:
            artifact["model"] = model
    if "parts" in extra:
        parts = extra["parts"]
        if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
            check.error((*path, "parts"), "must be a non-empty list of part names")
        else:
            unknown = [p for p in parts if p not in FIRMWARE_PARTS]
            if unknown:
                check.error(
                    (*path, "parts"),
                    f"unknown part {unknown[0]!r}; expected some of {', '.join(FIRMWARE_PARTS)}",
                )
            else:
                artifact["parts"] = list(parts)
    if "models" in extra:
        others = check.mapping(extra["models"], (*path, "models")) or {}
        artifact["models"] = {}
        for model, other in others.items():
            found = _artifact(check, other, (*path, "models", model), signed=False)
            if found is not None:
                artifact["models"][str(model)] = found
    return artifact


def parse_manifest(text: str) -> ParsedDocument:
    """Parse and validate a golden manifest; raise DocumentInvalid listing every error."""
    doc = load_lined_yaml(text)
    check = SchemaChecker(doc)
    root = check.mapping(doc.data, ())
    if root is None:
        check.raise_if_errors()
    check.unknown_keys(root, TOP_LEVEL, ())
    sku = check.string(root, "sku", ())
    version = check.string(root, "version", (), pattern=SEMVER, hint="a version like 1.2.0")

    firmware: dict[str, dict] = {}
    fw_block = check.mapping(root.get("firmware"), ("firmware",), required=False) or {}
    targets = {str(t) for t in FIRMWARE_TARGETS}
    for component, spec in fw_block.items():
        path = ("firmware", component)
        if component not in targets:
            check.error(
                path,
                f"unknown component {component!r}; expected one of {', '.join(sorted(targets))}",
            )
            continue
        artifact = _firmware_target(check, component, spec, path)
        if artifact is not None:
            firmware[component] = artifact

    bios: dict[str, Any] = {}
    bios_block = check.mapping(root.get("bios_settings"), ("bios_settings",), required=False) or {}
    for name, value in bios_block.items():
        if not isinstance(value, str | int | float | bool):
            check.error(("bios_settings", name), "must be a string, number or boolean")
        else:
            bios[str(name)] = value

    boot_order = root.get("boot_order", [])
    if not isinstance(boot_order, list) or not all(isinstance(b, str) for b in boot_order):
        check.error(("boot_order",), "must be a list of boot device names")
        boot_order = []

    os_image = None
    if "os_image" in root:
        os_image = _os_image(check, root["os_image"])

    ephemeral = _ephemeral(check, root["ephemeral"]) if "ephemeral" in root else None

    timeouts: dict[str, int] = {}
    t_block = check.mapping(root.get("timeouts"), ("timeouts",), required=False) or {}
    for phase, seconds in t_block.items():
        if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
            check.error(("timeouts", phase), "must be a positive number of seconds")
        else:
            timeouts[str(phase)] = seconds

    # Measured-boot golden values (fleet.measured_boot), recorded from a reference node.
    attestation = parse_attestation(check, root["attestation"]) if "attestation" in root else None

    # A rack-scale SKU's staged rules (fleet.rack_stages); absent: the default stages.
    rack_stages = (
        parse_rack_stages(check, root["rack_stages"]) if root and "rack_stages" in root else None
    )

    profile = check.string(root, "acceptance_profile", (), required=False)
    check.raise_if_errors()
    spec = {
        "sku": sku,
        "version": version,
        "description": root.get("description", ""),
        "firmware": firmware,
        "bios_settings": bios,
        "boot_order": boot_order,
        "os_image": os_image,
        "ephemeral": ephemeral,
        "acceptance_profile": profile,
        "timeouts": timeouts,
    }
    if attestation is not None:
        spec["attestation"] = attestation
    if rack_stages is not None:
        spec["rack_stages"] = rack_stages
    return ParsedDocument(sku=sku, version=version, spec=spec)
