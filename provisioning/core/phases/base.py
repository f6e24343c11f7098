"""What every phase is: observe, diff against the manifest, apply the delta, verify.

A phase's `execute` is called once per engine step and returns an Outcome (outcomes.py). Long
waits are never slept: the phase records its inner stage on its PhaseRecord and returns Wait;
the engine schedules the next look.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from ... import clock
from ...choices import Stage
from ...outcomes import Outcome, Skipped
from ...redfish.bmc import bmc_session
from ...redfish.errors import RedfishError
from ...step_writes import write_record

if TYPE_CHECKING:
    from fleet.models import Node

    from ...models import PhaseRecord, Run
    from ...redfish import RedfishClient


class Band(StrEnum):
    OOB = "oob"
    IN = "in"


@dataclass(frozen=True)
class PhaseInfo:
    """What the pipeline shows and enforces of a phase: its name, label, band, reboot, limit."""

    name: str
    label: str
    band: Band
    reboots: bool
    time_limit_s: int


@dataclass(frozen=True)
class Drift:
    """One aspect of a node that differs from (or matches) its manifest."""

    component: str
    expected: Any
    actual: Any

    @property
    def matched(self) -> bool:
        return self.expected == self.actual

    def as_dict(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "expected": self.expected,
            "actual": self.actual,
            "matched": self.matched,
        }


@dataclass
class PhaseContext:
    """What a phase gets: the run, node, its record, the manifest, and lazily opened clients."""

    run: Run
    node: Node
    record: PhaseRecord
    manifest: dict[str, Any]
    # The record's agent command was read with it at this look's start: no second read needed.
    command_fresh: bool = False
    # When this look's step claimed the run; None outside a step (a test's or a tool's look).
    claimed_at: datetime | None = None
    _bmc: RedfishClient | None = field(default=None, repr=False)
    _bmc_lease: ExitStack = field(default_factory=ExitStack, repr=False)
    # Lookups a phase makes more than once in one look (a gate's thresholds), kept for the look.
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def bmc(self) -> RedfishClient:
        """An open Redfish client for the node's BMC, lent by the session pool for this step."""
        if self._bmc is None:
            client = self._bmc_lease.enter_context(bmc_session(self.node))
            self._hold_system(client)
            self._bmc = client
        return self._bmc

    def _hold_system(self, client: RedfishClient) -> None:
        # A look never polls the system for a change: it reads it again only after a write. A
        # reboot read it five times (the override's place and read-back, the power state, the
        # reset's allowed types and target), each a GET of the same answer. A BMC that serves no
        # system (a power shelf) or cannot list it now has nothing held: the phase's own reads
        # meet that error where the phase handles it (a BMC restarting after an activation).
        try:
            system = client.system_path()
        except RedfishError:
            return
        self._bmc_lease.enter_context(client.transport.holding(system))

    def close(self) -> None:
        """End the step's use of the BMC (the engine calls this after every look)."""
        self._bmc = None
        self._bmc_lease.close()

    def no_delta(self, drifts: list[Drift]) -> Skipped | None:
        """Skipped when every drift matched; else remember what was compared and return None."""
        compared = {"drift": [d.as_dict() for d in drifts]}
        if all(d.matched for d in drifts):
            return Skipped(compared)
        self.record.compared = compared
        self.save_fields("compared")
        return None

    def save_fields(self, *fields: str) -> None:
        """Write these fields of the record as they are on it: one prepared UPDATE
        (step_writes), not the ORM's statement compiled afresh on every look."""
        write_record(self.record, fields)

    def set_stage(self, stage: Stage | str, **fields: Any) -> None:
        """Move the phase to its next inner stage; saved at once, before anything is applied.

        A Stage; a str only to put back a stage read from the record (reboot_into's undo).
        """
        self.record.stage = stage
        self.record.stage_started_at = timezone.now()
        for name, value in fields.items():
            setattr(self.record, name, value)
        write_record(self.record, ("stage", "stage_started_at", *fields))

    def stage_elapsed(self) -> float:
        """Node seconds since the current inner stage began."""
        if self.record.stage_started_at is None:
            return 0.0
        return clock.node_seconds(timezone.now() - self.record.stage_started_at)

    def time_limit(self, phase: Phase) -> float:
        """`phase`'s limit in node seconds for this run: the manifest's, else the phase's own."""
        timeouts = self.manifest.get("timeouts") or {}
        if self.record.phase in timeouts:
            return float(timeouts[self.record.phase])
        own = phase.time_limit(self)
        return float(own if own is not None else phase.info.time_limit_s)


class Phase(ABC):
    """Base of every phase: made with its PhaseInfo; subclasses implement `execute`.

    Phases that reconcile a measurable aspect also implement `observe` and `diff`, which the
    drift audit calls alone: they must never write to the node.
    """

    auditable: bool = False

    def __init__(self, info: PhaseInfo):
        self.info = info

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def label(self) -> str:
        return self.info.label

    @property
    def band(self) -> Band:
        return self.info.band

    @abstractmethod
    def execute(self, ctx: PhaseContext) -> Outcome:
        """One look: advance this phase as far as it can without waiting; say what happened."""

    def time_limit(self, ctx: PhaseContext) -> float | None:
        """A limit that depends on the run (a soak's length); None: the phase list's default."""
        return None

    def observe(self, ctx: PhaseContext) -> Any:
        """Read the current state of this phase's aspect (read-only)."""
        return None

    def diff(self, ctx: PhaseContext, observed: Any) -> list[Drift]:
        """Compare the observed state with the manifest (pure)."""
        return []
