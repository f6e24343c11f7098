"""Golden measurements recorded from a reference node: what would be pinned, and pinning it.

A fleet admin picks the attestation result of a node booted as it should be; Greenlight shows
the `attestation` section it would write (every measurement the node's verified log showed, by
PCR and digest) and the diff against the manifest, and only on confirmation writes it into a new
draft version of the manifest. The draft is published like any other change, so golden values
are versioned and diffed with the manifest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from django.db import transaction

from fleet.choices import DocumentStatus, EventKind
from fleet.events import record as record_event
from fleet.measured_boot import DEFAULT_MEASURED
from fleet.models import Manifest

from .gates import GateName
from .models import GateResult

# The top-level `attestation:` block of a manifest's YAML: its key line and every line under it
# (indented, blank or a comment), up to the next top-level key.
SECTION = re.compile(r"^attestation:.*\n(?:(?:[ \t].*|[ \t]*|#.*)(?:\n|$))*", re.MULTILINE)


class GoldenRefused(ValueError):
    """This result cannot be a reference: the message says why."""


@dataclass
class GoldenPlan:
    """What pinning would write: the section, its YAML, the measurements the node did not show."""

    result: GateResult
    base: Manifest
    section: dict[str, Any]
    not_measured: list[str]

    @property
    def section_yaml(self) -> str:
        return yaml.safe_dump(
            {"attestation": self.section}, sort_keys=False, default_flow_style=None, width=100
        )

    def new_yaml(self, text: str | None = None) -> str:
        """A manifest's YAML (the base's by default) with this section in place of its own."""
        kept = SECTION.sub("", self.base.yaml_text if text is None else text).rstrip("\n")
        return f"{kept}\n{self.section_yaml}"


def plan_golden(result: GateResult, measured: tuple[str, ...] = DEFAULT_MEASURED) -> GoldenPlan:
    """The golden section a reference node's attestation result gives; raise GoldenRefused."""
    tpm = (result.metrics or {}).get("tpm") or {}
    who = f"{result.node.serial}'s {result.get_gate_display().lower()} result"
    if result.gate != GateName.ATTESTATION:
        raise GoldenRefused(f"{who} is not an attestation")
    if not tpm.get("quote_verified"):
        raise GoldenRefused(f"{who} has no verified TPM quote")
    if not tpm.get("log_replays"):
        raise GoldenRefused(f"{who}: its event log does not replay to the quoted PCRs")
    seen = tpm.get("measurements") or {}
    base = Manifest.current_for(result.node.sku) or result.run.manifest
    measurements = {
        name: {
            "digests": sorted({e["digest"] for e in seen[name]}),
            "count": len(seen[name]),
        }
        for name in measured
        if seen.get(name)
    }
    if not measurements:
        raise GoldenRefused(f"{who} shows none of the measurements {', '.join(measured)}")
    section = {
        "bank": tpm.get("bank") or "sha256",
        "pcrs": sorted(int(p) for p in tpm.get("pcrs") or {}),
        "measurements": measurements,
    }
    return GoldenPlan(result, base, section, [m for m in measured if not seen.get(m)])


def pin_golden(plan: GoldenPlan, *, actor) -> Manifest:
    """Write the plan's section into a new draft of its manifest; the node's log says so."""
    with transaction.atomic():
        if plan.base.status == DocumentStatus.DRAFT:
            draft = plan.base
        else:
            draft = plan.base.clone_as_draft(actor=actor)
        draft.yaml_text = plan.new_yaml(draft.yaml_text)
        draft.full_clean()
        draft.save()
        record_event(
            plan.result.node,
            EventKind.UPDATED,
            actor=actor,
            message=f"Measured-boot golden values recorded from this node into manifest "
            f"{draft.sku.name} {draft.version} (draft)",
            data={"manifest": draft.pk, "gate_result": plan.result.pk},
        )
    return draft
