"""The golden manifest schema: YAML in, a validated spec out, errors keyed to line and field."""

from __future__ import annotations

import re
from typing import Any

from .choices import FIRMWARE_TARGETS
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
    "acceptance_profile",
    "timeouts",
}


def _artifact(check: SchemaChecker, value: Any, path: tuple, *, signed: bool) -> dict | None:
    block = check.mapping(value, path)
    if block is None:
        return None
    allowed = {"version", "url", "sha256"} | ({"signature"} if signed else set())
    check.unknown_keys(block, allowed, path)
    out = {
        "version": check.string(block, "version", path, required=not signed),
        "url": check.string(block, "url", path, pattern=URL, hint="an http(s) or file URL"),
        "sha256": check.string(
            block, "sha256", path, pattern=SHA256, hint="64 lowercase hex digits"
        ),
    }
    if signed:
        out["signature"] = check.string(block, "signature", path)
    return {k: v for k, v in out.items() if v is not None}


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
        artifact = _artifact(check, spec, path, signed=False)
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
        os_image = _artifact(check, root["os_image"], ("os_image",), signed=True)

    timeouts: dict[str, int] = {}
    t_block = check.mapping(root.get("timeouts"), ("timeouts",), required=False) or {}
    for phase, seconds in t_block.items():
        if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
            check.error(("timeouts", phase), "must be a positive number of seconds")
        else:
            timeouts[str(phase)] = seconds

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
        "acceptance_profile": profile,
        "timeouts": timeouts,
    }
    return ParsedDocument(sku=sku, version=version, spec=spec)
