"""How far a long phase has come, in one unit per kind: soak hours, or a BMC task's percent.

The slots, the node panel and the run's wait reason read it from here, so they never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .phase_state import FirmwarePush, SoakState


@dataclass(frozen=True)
class Progress:
    """Done of wanted, in `unit`: "h" (hours of soak) or "%" (a BMC update task)."""

    done: float
    wanted: float
    unit: str

    @property
    def fraction(self) -> float:
        return max(0.0, min(self.done / self.wanted, 1.0)) if self.wanted else 0.0

    @property
    def percent(self) -> int:
        return round(100 * self.fraction)

    @property
    def words(self) -> str:
        if self.unit == "%":
            return f"{self.done:.0f}% of the update task"
        return f"{self.done:.1f} h of {self.wanted:g} h"


def soak(soaked_s: float, wanted_s: float) -> Progress:
    """A soak's progress in hours."""
    return Progress(soaked_s / 3600, wanted_s / 3600, "h")


def of_phase(resume: dict[str, Any] | None) -> Progress | None:
    """The progress a phase record's `resume` state carries, if its phase reports any."""
    soaked = SoakState.of(resume)
    if soaked.wanted_s:
        return soak(soaked.soaked_s, soaked.wanted_s)
    percent = FirmwarePush.of(resume).task_percent
    if percent is not None:
        return Progress(float(percent), 100.0, "%")
    return None
