"""Does what a BMC reports match the SKU a node is enrolled as? (GPUs, fabric NICs, DPUs, drives)

Enrollment refuses a mismatch unless a person forces it with a reason: a GPU-less server, a
BlueField's own BMC or a four-GPU tray enrolled as an eight-GPU HGX node would fail every gate
after hours of provisioning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fleet.models import Sku

# A GPU's family in a model string: "H100-SXM5-80GB", "NVIDIA H100 80GB HBM3" and
# "NVIDIA_A100-SXM4-40GB" name H100, H100 and A100.
FAMILY = re.compile(r"(?<![A-Za-z0-9])(GH200|GB200|[AHBL]\d{2,3})(?![0-9])", re.IGNORECASE)


@dataclass
class Seen:
    """The hardware a BMC reports; a count is None when the BMC gives no way to know it."""

    gpus: list[dict[str, Any]] | None
    fabric_nics: int | None
    dpus: int | None
    drives: int | None
    notes: list[str] = field(default_factory=list)


def gpu_family(model: str) -> str:
    """The GPU family a model names (upper case), or the model itself lower-cased."""
    found = FAMILY.search(model or "")
    return found.group(1).upper() if found else " ".join((model or "").lower().split())


def differences(sku: Sku, seen: Seen) -> list[str]:
    """What differs between the SKU and the BMC's report, one phrase each; [] when it matches."""
    out = []
    if seen.gpus is not None:
        if len(seen.gpus) != sku.gpu_count:
            out.append(
                f"GPUs: SKU {sku.name} has {sku.gpu_count}, the BMC reports {len(seen.gpus)}"
            )
        wanted = gpu_family(sku.gpu_model)
        models = sorted({g.get("model") or "" for g in seen.gpus if g.get("model")})
        other = [m for m in models if gpu_family(m) != wanted]
        if sku.gpu_model and other:
            out.append(f"GPU model: SKU {sku.name} has {sku.gpu_model}, the BMC reports "
                       f"{', '.join(other)}")  # fmt: skip
    for label, wanted, count in (
        ("fabric NICs", sku.nic_count, seen.fabric_nics),
        ("DPUs", sku.dpu_count, seen.dpus),
        ("drives", sku.drive_count, seen.drives),
    ):
        if count is not None and count != wanted:
            out.append(f"{label}: SKU {sku.name} has {wanted}, the BMC reports {count}")
    return out


def seen_from(
    gpus: list[dict[str, Any]] | None,
    adapters: list[dict[str, Any]] | None,
    drives: list[dict[str, Any]] | None,
) -> Seen:
    """A Seen from the probe's lists (None: the BMC could not be asked)."""
    notes = []
    fabric = dpus = None
    if adapters is not None:
        dpus = sum(1 for a in adapters if a["kind"] == "dpu")
        nics = [a for a in adapters if a["kind"] != "dpu"]
        if all(a["model"] or a["part_number"] for a in nics):
            fabric = sum(1 for a in nics if a["fabric"])
        else:
            # NVIDIA DGX H100's BMC lists its adapters with no model or maker at all.
            notes.append("NIC count not compared: the BMC names no model for some adapters")
    if gpus is not None and any(not g.get("model") for g in gpus):
        notes.append("GPU model not compared for GPUs the BMC names no model for")
    return Seen(gpus=gpus, fabric_nics=fabric, dpus=dpus, drives=drives_count(drives), notes=notes)


def drives_count(drives: list[dict[str, Any]] | None) -> int | None:
    return None if drives is None else len(drives)
