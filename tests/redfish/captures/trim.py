"""Copy a Redfish capture (DMTF mockup layout) into this folder, keeping what the probe reads.

Usage: python trim.py SOURCE_ROOT NAME, where SOURCE_ROOT is the folder that is /redfish/v1
(its index.json is the service root). Only data files are copied, never code: the identity,
topology and inventory resources (systems, chassis, managers, update service), without logs,
sensors, schemas and registries, which are most of a capture's size and none of what Greenlight
reads. Links to what was left out answer 404 when served, as on a BMC that lacks them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

TOP_LEVEL = {"Systems", "Chassis", "Managers", "UpdateService", "SessionService", "TaskService"}
# Collections whose contents are never read by the probe; their own index.json stays when the
# segment is the last one (so a link to the collection still answers).
DROPPED = {
    "accelerationfunctions", "accounts", "assembly", "attributes", "bootoptions", "certificates",
    "controls", "controllers", "dimms", "entries", "environmentmetrics", "jobs", "logentries",
    "logservices", "memory", "memorydomains", "memorymetrics", "metrics", "networkdevicefunctions",
    "networkprotocol", "oem", "operatingconfigs", "outlets", "pciefunctions", "portmetrics",
    "ports", "power", "powersubsystem", "processormetrics", "secureboot", "securebootdatabases",
    "sensors", "serialinterfaces", "sessions", "subprocessors", "tasks", "thermal",
    "thermalsubsystem", "hostinterfaces", "volumes", "mappings", "segments", "storagecontrollers",
    "thermalmetrics", "powersupplies", "fans", "trustedcomponents", "mediacontrollers",
    "ethernetinterfaces@managers",
}  # fmt: skip


def kept(relative: Path) -> bool:
    """Whether a capture file (relative to /redfish/v1) is copied."""
    parts = relative.parts
    if relative.name not in ("index.json",):
        return False
    if len(parts) == 1:
        return True  # the service root
    if any("?" in p or "$" in p for p in parts):
        return False  # $expand / $skip pages saved by the capture tool
    if parts[0] not in TOP_LEVEL and parts[0].lower() not in {t.lower() for t in TOP_LEVEL}:
        return False
    if parts[0].lower() in ("sessionservice", "taskservice") and len(parts) > 2:
        return False
    if (
        parts[0].lower() == "managers"
        and len(parts) > 3
        and parts[2].lower() not in ("virtualmedia",)
    ):
        return False
    inner = [p.lower() for p in parts[1:-1]]
    # A dropped collection may keep its own index (the last directory), not its members.
    return not any(p in DROPPED for p in inner[:-1])


def copy(source: Path, target: Path) -> tuple[int, int]:
    """Copy the kept files; returns (files, bytes)."""
    files = size = 0
    for path in sorted(source.rglob("index.json")):
        relative = path.relative_to(source)
        if not kept(relative):
            continue
        out = target / relative
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out)
        files += 1
        size += path.stat().st_size
    return files, size


if __name__ == "__main__":
    src, name = Path(sys.argv[1]), sys.argv[2]
    count, total = copy(src, Path(__file__).resolve().parent / name)
    print(f"{name}: {count} files, {total / 1e6:.2f} MB")
