"""LabNode: the hardware state of one simulated node, moved forward by the lab clock.

The BMC server reads and changes it; the in-band agent simulation attaches to its power events.
Time-dependent effects (a reset finishing, an update completing) are scheduled in lab seconds
and applied by tick(), which the hall calls periodically and before every BMC answer.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .faults import NodeFaults

FIRMWARE_COMPONENTS = ("bmc", "bios", "hgx", "nic", "dpu", "nvme")

# Lab seconds an update takes, per component (the order of magnitude of real ones).
UPDATE_SECONDS = {"bmc": 240, "bios": 180, "hgx": 600, "nic": 120, "dpu": 300, "nvme": 60}
BOOT_SECONDS = 30.0
POWER_OFF_SECONDS = 2.0
GRACEFUL_OFF_SECONDS = 20.0

BootHook = Callable[["LabNode", str], None]
PowerOffHook = Callable[["LabNode"], None]


@dataclass
class LabTask:
    """A BMC task (firmware update or BIOS configuration job)."""

    id: str
    kind: str  # "firmware" or "bios"
    component: str
    version: str
    started: float
    finishes: float | None  # lab time; None: finishes at the next reset (BIOS job)
    fails: bool = False
    state: str = "Running"
    message: str = ""
    percent: int = 0


@dataclass
class LabNode:
    """One simulated node: identity, parts, power, boot, BIOS, firmware, BMC tasks."""

    index: int
    serial: str
    flavour: str
    manufacturer: str
    model: str
    uuid: str
    bmc_address: str
    username: str
    password: str
    faults: NodeFaults
    firmware: dict[str, str]
    bios_current: dict[str, Any]
    nics: list[dict[str, str]]
    gpus: list[dict[str, str]]
    drives: list[dict[str, str]]
    dpus: list[dict[str, str]]
    power: str = "Off"
    boot_target: str = "None"
    boot_enabled: str = "Disabled"
    boot_mode: str = "UEFI"
    bios_pending: dict[str, Any] = field(default_factory=dict)
    bios_job: str | None = None  # Dell: pending BIOS applies only with a job
    firmware_staged: dict[str, str] = field(default_factory=dict)
    firmware_previous: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, LabTask] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)  # token -> session id
    licensed: bool = True
    requests: int = 0  # answered by the BMC (tests check a refusal was not retried)
    # Every request that changes something (not GET, not a session login or logout): tests
    # read it to prove a read-only operation (the drift audit) wrote nothing.
    writes: list[str] = field(default_factory=list)
    boot_count: int = 0
    last_boot_target: str = ""
    on_boot: list[BootHook] = field(default_factory=list)
    on_power_off: list[PowerOffHook] = field(default_factory=list)
    _timers: list[tuple[float, int, Callable[[], None]]] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _seq: itertools.count = field(default_factory=lambda: itertools.count(1))

    # -- time -------------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        """Apply every scheduled effect that is due at lab time `now`, in order."""
        while True:
            with self._lock:
                self._timers.sort(key=lambda t: (t[0], t[1]))
                if not self._timers or self._timers[0][0] > now:
                    return
                _, _, effect = self._timers.pop(0)
                effect()

    def _after(self, now: float, seconds: float, effect: Callable[[], None]) -> None:
        self._timers.append((now + seconds, next(self._seq), effect))

    def _slowness(self) -> float:
        """How many times longer this power action takes than a healthy node's."""
        if self.faults.has("slow_reset"):
            return float(self.faults.param("slow_reset") or 20)
        once = self.faults.param("slow_reset_once")
        if self.faults.consume("slow_reset_once"):
            return float(once or 3)
        return 1.0

    # -- power ------------------------------------------------------------------------------

    @property
    def macs(self) -> list[str]:
        """All MAC addresses, boot NICs first."""
        return [nic["mac"] for nic in self.nics]

    def reset(self, reset_type: str, now: float) -> str:
        """Start a power action; returns "" if accepted or the reason it is refused."""
        with self._lock:
            if reset_type in ("On", "ForceOn", "PushPowerButton") and self.power == "Off":
                if reset_type != "PushPowerButton" and self.faults.consume("power_on_ignored"):
                    return ""  # answered 204, nothing happens: the caller must read back
                self.power = "PoweringOn"
                self._after(now, BOOT_SECONDS * self._slowness(), self._boot)
            elif reset_type in ("On", "ForceOn"):
                return ""  # already on or on its way: nothing to do
            elif reset_type in ("ForceOff", "GracefulShutdown", "PushPowerButton"):
                if self.power in ("Off", "PoweringOff"):
                    return ""
                delay = (
                    POWER_OFF_SECONDS if reset_type != "GracefulShutdown" else GRACEFUL_OFF_SECONDS
                )
                self.power = "PoweringOff"
                self._after(now, delay * self._slowness(), self._off)
            elif reset_type in ("ForceRestart", "GracefulRestart", "PowerCycle"):
                if self.power == "Off":
                    return "the system is off; power it on instead"
                self.power = "PoweringOff"
                slow = self._slowness()
                self._after(now, POWER_OFF_SECONDS * slow, self._off)
                self._after(now, (POWER_OFF_SECONDS + BOOT_SECONDS) * slow, self._power_up)
            else:
                return f"reset type {reset_type} is not supported"
            return ""

    def _power_up(self) -> None:
        self.power = "PoweringOn"
        self._boot()

    def _off(self) -> None:
        self.power = "Off"
        for hook in list(self.on_power_off):
            hook(self)

    def _boot(self) -> None:
        """The host comes up: pending BIOS and staged firmware take effect, override consumed."""
        self._apply_pending_bios()
        for component, version in self.firmware_staged.items():
            self.firmware_previous[component] = self.firmware[component]
            self.firmware[component] = version
        self.firmware_staged.clear()
        target = "Hdd"
        if self.boot_enabled in ("Once", "Continuous") and self.boot_target != "None":
            target = self.boot_target
            if self.boot_enabled == "Once":
                self.boot_enabled, self.boot_target = "Disabled", "None"
        self.power = "On"
        self.boot_count += 1
        self.last_boot_target = target
        for hook in list(self.on_boot):
            hook(self, target)

    def _apply_pending_bios(self) -> None:
        if not self.bios_pending:
            return
        if self.flavour == "dell" and self.bios_job is None:
            return  # iDRAC: staged values without a configuration job are not applied
        self.bios_current.update(self.bios_pending)
        self.bios_pending.clear()
        if self.bios_job and self.bios_job in self.tasks:
            task = self.tasks[self.bios_job]
            task.state, task.percent, task.message = "Completed", 100, "Job completed"
        self.bios_job = None

    # -- boot, BIOS -------------------------------------------------------------------------

    def set_boot(self, target: str | None, enabled: str | None, mode: str | None) -> None:
        """Store a boot override (what a PATCH of Boot does)."""
        with self._lock:
            if target is not None:
                self.boot_target = target
            if enabled is not None:
                self.boot_enabled = enabled
            if mode is not None:
                self.boot_mode = mode

    def stage_bios(self, attributes: dict[str, Any], now: float, *, job: bool) -> str | None:
        """Stage BIOS attributes for the next reset; with job=True return a BIOS job id."""
        with self._lock:
            self.bios_pending.update(attributes)
            if not job:
                return None
            if self.bios_job is None:
                task = self._new_task("bios", "bios", "", now, None, prefix="JID_")
                task.message = "Job scheduled: applies at the next reset"
                self.bios_job = task.id
            return self.bios_job

    # -- firmware ---------------------------------------------------------------------------

    def start_update(self, component: str, version: str, now: float) -> LabTask:
        """Start a firmware update; it completes after UPDATE_SECONDS lab seconds."""
        if component not in FIRMWARE_COMPONENTS:
            raise ValueError(f"unknown firmware component {component!r}")
        with self._lock:
            fails = self.faults.param("firmware_update_fails") == component
            prefix = "JID_" if self.flavour == "dell" else ""
            task = self._new_task(
                "firmware", component, version, now, now + UPDATE_SECONDS[component], prefix=prefix
            )
            task.fails = fails
            self._after(now, UPDATE_SECONDS[component], lambda: self._finish_update(task))
            return task

    def _finish_update(self, task: LabTask) -> None:
        if task.fails:
            task.state, task.message = "Exception", f"{task.component} image failed verification"
            return
        task.state, task.percent = "Completed", 100
        if task.component == "bmc":
            # A BMC flashes and reboots itself: the new version runs as soon as it is back.
            self.firmware_previous["bmc"] = self.firmware["bmc"]
            self.firmware["bmc"] = task.version
            task.message = "BMC updated and restarted"
        else:
            self.firmware_staged[task.component] = task.version
            task.message = "Update staged: applies at the next host reset"

    def _new_task(self, kind, component, version, now, finishes, *, prefix: str) -> LabTask:
        task_id = f"{prefix}{self.index:03d}{next(self._seq):05d}"
        task = LabTask(task_id, kind, component, version, now, finishes)
        self.tasks[task_id] = task
        return task

    def task_view(self, task_id: str, now: float) -> LabTask | None:
        """A task with its percent brought up to date."""
        with self._lock:
            task = self.tasks.get(task_id)
            if task and task.state == "Running" and task.finishes:
                span = max(task.finishes - task.started, 1e-9)
                task.percent = min(99, int(100 * (now - task.started) / span))
            return task
