"""Which firmware inventory entries a manifest target manages, and the version each must run.

A kind can hold several models (NVMe drives of two makers) and several parts (the HGX tray's
HMC, GPUs, NVSwitches, ERoTs): the manifest's target names the parts whose version is the
target's (by default the kind's main part: the HMC for an HGX bundle) and, per model, its own
artifact. Entries that are not running or that no target covers are no drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent import protocol
from fleet.manifests import DEFAULT_PARTS

from ..redfish import FirmwareItem
from ..redfish.versions import same_version


@dataclass(frozen=True)
class Target:
    """One artifact of a kind's target, for one model or for any."""

    version: str
    url: str
    sha256: str
    model: str | None
    parts: tuple[str, ...]


def targets(kind: str, block: dict[str, Any] | None) -> list[Target]:
    """The targets a manifest's firmware block for a kind holds: per-model ones first."""
    if not block:
        return []
    parts = tuple(block.get("parts") or DEFAULT_PARTS.get(kind, (kind,)))
    out = [
        Target(other["version"], other["url"], other["sha256"], model, parts)
        for model, other in (block.get("models") or {}).items()
    ]
    out.append(Target(block["version"], block["url"], block["sha256"], block.get("model"), parts))
    return out


def for_agent(kind: str, block: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The targets as the agent's flash command takes them ({model, version, url, sha256}),
    per-model ones first: the agent picks each device's by `protocol.firmware_target_for`."""
    return [
        {"model": t.model, "version": t.version, "url": t.url, "sha256": t.sha256}
        for t in targets(kind, block)
    ]


def _fits(target: Target, item: FirmwareItem) -> bool:
    return item.part in target.parts and protocol.model_fits(target.model, item.model, item.name)


def target_for(item: FirmwareItem, candidates: list[Target]) -> Target | None:
    """The target an entry answers to: the first whose model and parts fit it, or None."""
    return next((t for t in candidates if _fits(t, item)), None)


def managed(
    kind: str, items: list[FirmwareItem], block: dict[str, Any] | None
) -> list[tuple[FirmwareItem, Target]]:
    """The running entries of a kind that a target covers, each with its target."""
    candidates = targets(kind, block)
    out = []
    for item in items:
        if item.kind != kind or not item.running:
            continue
        target = target_for(item, candidates)
        if target is not None:
            out.append((item, target))
    return out


def at_target(item: FirmwareItem, target: Target) -> bool:
    """Whether an entry runs its target's version, compared as its kind compares versions."""
    return same_version(item.kind, item.version, target.version)
