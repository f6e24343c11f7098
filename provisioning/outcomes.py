"""What a phase may return: a closed set. The engine refuses anything else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Done:
    """The phase reconciled its aspect; `changes` lists [{component, from, to}] it applied."""

    changes: list[dict[str, Any]] = field(default_factory=list)
    compared: dict[str, Any] = field(default_factory=dict)
    log: str = ""


@dataclass(frozen=True)
class Skipped:
    """Observe found no delta: nothing was applied. `compared` says what matched."""

    compared: dict[str, Any] = field(default_factory=dict)
    log: str = ""


@dataclass(frozen=True)
class Wait:
    """Look again after `seconds` of node time; `reason` says what the phase waits for.

    `safety_net`: what the phase waits for nudges the run when it comes (an agent's check-in,
    a command's result), so the timed look is only for news that never came. Its message is
    sent only shortly before it is due (scheduling.hand_over), not at the hand-over: sent then,
    it arrived after the news had been handled and found its step taken.
    """

    seconds: float
    reason: str
    safety_net: bool = False


@dataclass(frozen=True)
class TransientFailure:
    """A hiccup (BMC busy, connection dropped, agent gone during a reboot): retry soon.

    Counts against the run's transient budget, never its failure budget.
    """

    reason: str
    kind: str = "transient"
    # The part to name if the transient budget runs out on this error ("bmc", "agent").
    component: str = ""


@dataclass(frozen=True)
class Failure:
    """The phase really failed. `component` names the failing part (e.g. "NVMe 3", "bmc")."""

    reason: str
    component: str = ""
    # A fault retrying cannot fix (wrong hardware, refused credentials): fail the run at once.
    permanent: bool = False
    # The node itself is unfit (a gate found a fault, a drive kept its data): quarantine it
    # rather than mark it failed, so it cannot drift back into service.
    quarantine: bool = False


@dataclass(frozen=True)
class NeedsPerson:
    """Only a person can help (e.g. an AC power cycle); shown on the node as a task."""

    reason: str
    recheck_seconds: float = 300.0


Outcome = Done | Skipped | Wait | TransientFailure | Failure | NeedsPerson
OUTCOME_TYPES = (Done, Skipped, Wait, TransientFailure, Failure, NeedsPerson)
