"""The workflow state a phase keeps between its looks, typed: the one reader and writer of it.

A phase keeps this state in its record's `resume` JSON (apart from `compared`, which shows what
observe/diff saw), so a phase resumed after a crash reads what it already did from its own row.
Each kind of state is a frozen dataclass whose fields are its schema: `of(resume)` reads it
(defaults where an older record lacks a key), `into(resume)` returns the record's JSON with it
written. No other code names these keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Compared = dict[str, Any]


@dataclass(frozen=True)
class PowerOnRequests:
    """How many power-on requests the BMC accepted while the node stayed off, the boot
    override set before the first (its target, "" when the node boots its own boot order), and
    the BMC's words when it refused that override."""

    sent: int = 1
    boots_into: str = ""
    boot_refused: str = ""

    @classmethod
    def of(cls, compared: Compared | None) -> PowerOnRequests:
        compared = compared or {}
        return cls(
            sent=int(compared.get("power_on_requests", 1)),
            boots_into=str(compared.get("power_on_boots_into") or ""),
            boot_refused=str(compared.get("power_on_boot_refused") or ""),
        )

    def into(self, compared: Compared | None) -> Compared:
        return {
            **(compared or {}),
            "power_on_requests": self.sent,
            "power_on_boots_into": self.boots_into,
            "power_on_boot_refused": self.boot_refused,
        }


@dataclass(frozen=True)
class FirmwarePush:
    """An out-of-band update pushed to the BMC: the version it replaces, the BMC's tasks before
    the push (to find the push's own task after a lost answer), the task's last percent."""

    _KEYS = ("from", "tasks_before", "task_percent")

    from_version: str = ""
    tasks_before: tuple[str, ...] | None = None
    task_percent: int | None = None

    @classmethod
    def of(cls, compared: Compared | None) -> FirmwarePush:
        kept = compared or {}
        before = kept.get("tasks_before")
        percent = kept.get("task_percent")
        return cls(
            from_version=str(kept.get("from", "")),
            tasks_before=None if before is None else tuple(before),
            task_percent=None if percent is None else int(percent),
        )

    def into(self, compared: Compared | None) -> Compared:
        kept = {k: v for k, v in (compared or {}).items() if k not in self._KEYS}
        kept["from"] = self.from_version
        if self.tasks_before is not None:
            kept["tasks_before"] = list(self.tasks_before)
        if self.task_percent is not None:
            kept["task_percent"] = self.task_percent
        return kept


@dataclass(frozen=True)
class ActivationRequest:
    """What an ACTIVATING stage asked the BMC for, and whether the BMC's answer came back.

    `sent` is saved False with the stage, before the POST, and True once the POST returned: a
    look that reads False knows the worker stopped in between and the BMC may never have been
    asked. A record saved before this key existed reads as sent (the stage only ever waited).
    `power_before` is the host's power as read just before; `resent`: the one second try made.
    """

    _KEYS = ("activation", "activation_sent", "activation_power_before", "activation_resent")

    how: str = ""
    sent: bool = True
    power_before: str = ""
    resent: bool = False

    @classmethod
    def of(cls, compared: Compared | None) -> ActivationRequest:
        kept = compared or {}
        return cls(
            how=str(kept.get("activation", "")),
            sent=bool(kept.get("activation_sent", True)),
            power_before=str(kept.get("activation_power_before", "")),
            resent=bool(kept.get("activation_resent", False)),
        )

    def into(self, compared: Compared | None) -> Compared:
        kept = {k: v for k, v in (compared or {}).items() if k not in self._KEYS}
        kept.update({"activation": self.how, "activation_sent": self.sent,
                     "activation_power_before": self.power_before,
                     "activation_resent": self.resent})  # fmt: skip
        return kept


@dataclass(frozen=True)
class Flash:
    """One device an in-band update flashed, as the agent reported it."""

    device: str
    from_version: str
    to_version: str

    def as_change(self) -> dict[str, str]:
        return {"component": self.device, "from": self.from_version, "to": self.to_version}


@dataclass(frozen=True)
class FlashedDevices:
    """The devices an in-band firmware phase flashed (empty: every device was at its target)."""

    flashed: tuple[Flash, ...] = ()

    @classmethod
    def of(cls, compared: Compared | None) -> FlashedDevices:
        return cls.from_agent((compared or {}).get("flashed") or [])

    @classmethod
    def from_agent(cls, reported: list[dict[str, Any]]) -> FlashedDevices:
        """The agent's `flashed` list: [{device, from, to}]."""
        return cls(
            tuple(
                Flash(str(f.get("device", "")), str(f.get("from", "")), str(f.get("to", "")))
                for f in reported
            )
        )

    def into(self, compared: Compared | None) -> Compared:
        rows = [
            {"device": f.device, "from": f.from_version, "to": f.to_version} for f in self.flashed
        ]
        return {**(compared or {}), "flashed": rows}


@dataclass(frozen=True)
class GpuResets:
    """The GPUs a gate reset after a single XID 63/94, before running its tools again."""

    parts: tuple[str, ...] = ()

    @classmethod
    def of(cls, compared: Compared | None) -> GpuResets:
        return cls(tuple((compared or {}).get("gpus_reset") or ()))

    def into(self, compared: Compared | None) -> Compared:
        return {**(compared or {}), "gpus_reset": list(self.parts)}


@dataclass(frozen=True)
class SoakState:
    """How far a soak has come."""

    soaked_s: int = 0
    # Where the chunk now under way ends; None between chunks.
    chunk_end_s: int | None = None
    wanted_s: int = 0

    @classmethod
    def of(cls, compared: Compared | None) -> SoakState:
        """Read the state a record keeps (an empty one before the first chunk)."""
        kept = compared or {}
        end = kept.get("chunk_end_s")
        return cls(
            soaked_s=int(kept.get("soaked_s", 0)),
            chunk_end_s=None if end is None else int(end),
            wanted_s=int(kept.get("wanted_s", 0)),
        )

    def as_json(self) -> Compared:
        """The state as the record keeps it."""
        kept: Compared = {"soaked_s": self.soaked_s, "wanted_s": self.wanted_s}
        return kept if self.chunk_end_s is None else {**kept, "chunk_end_s": self.chunk_end_s}
