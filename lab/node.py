"""LabNode: the hardware state of one simulated node, moved forward by the lab clock.

The BMC server reads and changes it; the in-band agent simulation attaches to its power events.
Time-dependent effects (a reset finishing, an update completing) are scheduled in lab seconds
and applied by tick(), which the hall calls periodically and before every BMC answer.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .faults import NodeFaults

FIRMWARE_COMPONENTS = ("bmc", "bios", "hgx", "nic", "dpu", "nvme")

# Lab seconds an update takes, per component (the order of magnitude of real ones).
UPDATE_SECONDS = {"bmc": 240, "bios": 180, "hgx": 600, "nic": 120, "dpu": 300, "nvme": 60}
BOOT_SECONDS = 30.0
# Overrides that mean "boot a CD", and what a host without a bootable one reports as booted.
CD_TARGETS = ("Cd", "UsbCd")
NOTHING_TO_BOOT = "NoBootDevice"
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
    # When the new image runs: "now" (a BMC flashes and restarts itself), "host_reset",
    # "aux_power" (GB200: NvidiaChassis.AuxPowerReset), "manager_reset" (XCC: Manager.Reset).
    activation: str = "host_reset"
    # iDRAC: a BIOS/NIC package's job sits Scheduled until the host reboots, and runs in POST.
    waits_for_host: bool = False
    # OpenBMC: the monitor has given its one 204 (bmcweb task.hpp); it answers 404 after.
    monitor_ended: bool = False


class JobQueueBusy(Exception):
    """iDRAC refuses a new job while another is pending or running (LC068 / RAC0679)."""

    def __init__(self, message_id: str) -> None:
        super().__init__(message_id)
        self.message_id = message_id


# iLO's UpdateService.Oem.Hpe.State while it flashes, by the share of the flash done (HPE iLO
# 5/6 RESTful API reference, UpdateService: Idle, Uploading, Verifying, Writing, Complete, Error).
HPE_FLASH_STEPS = ((0.2, "Uploading"), (0.4, "Verifying"), (1.0, "Writing"))


@dataclass
class HpeFlash:
    """An iLO flash in flight: iLO answers SimpleUpdate with no task, only this state."""

    component: str
    version: str
    started: float
    finishes: float
    activation: str
    state: str = "Uploading"
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
    # "server", or a rack member's kind ("compute_tray", "switch_tray", "power_shelf"): a
    # switch tray and a power shelf are devices that run no agent (lab.rack couples them).
    kind: str = "server"
    # A switch tray's NVLink fabric as its BMC reports it ("" off, "Starting", "Enabled"), and
    # whether a power shelf tripped (its output off): lab.rack moves both.
    fabric_state: str = ""
    tripped: bool = False
    power: str = "Off"
    boot_target: str = "None"
    boot_enabled: str = "Disabled"
    boot_mode: str = "UEFI"
    bios_pending: dict[str, Any] = field(default_factory=dict)
    bios_job: str | None = None  # Dell: pending BIOS applies only with a job
    firmware_staged: dict[str, str] = field(default_factory=dict)
    firmware_previous: dict[str, str] = field(default_factory=dict)
    # Written but not yet running until the aux power cycle or manager reset its activation
    # names: component -> (version, activation). The inventory reports the old version.
    firmware_pending: dict[str, tuple[str, str]] = field(default_factory=dict)
    hpe_flash: HpeFlash | None = None
    # OpenBMC (bmcweb redfish-core/lib/task.hpp) keeps tasks in memory: a BMC reset forgets them.
    forgets_tasks_on_bmc_reset: bool = False
    tasks: dict[str, LabTask] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)  # token -> session id
    # Mutating acts being answered now, and the most there ever were at once.
    acts_in_flight: int = 0
    most_acts_in_flight: int = 0
    licensed: bool = True
    requests: int = 0  # answered by the BMC (tests check a refusal was not retried)
    # Who sent them: each request's User-Agent, counted. All callers share loopback, so the
    # address says nothing; tests read this to prove a hall's BMCs hear only its own workers.
    origins: Counter[str] = field(default_factory=Counter)
    # Every request that changes something (not GET, not a session login or logout): tests
    # read it to prove a read-only operation (the drift audit) wrote nothing.
    writes: list[str] = field(default_factory=list)
    # Every GET by its canonical path, counted: tests read it to prove a look reads a
    # resource once (a firmware inventory is a GET per member on a real BMC).
    reads: Counter[str] = field(default_factory=Counter)
    # Every firmware update the BMC accepted, by component, in order: a job-queue clear or a
    # BMC reset forgets tasks, not this (tests count flashes with it).
    flashes: list[str] = field(default_factory=list)
    boot_count: int = 0
    last_boot_target: str = ""
    # The virtual CD: its image, whether it reads Inserted (an OpenBMC mounts it a little after
    # the InsertMedia answer), which overrides boot it (Supermicro: UsbCd), and iDRAC's OEM
    # one-time boot to it (ImportSystemConfiguration ServerBoot.1#FirstBootDevice VCD-DVD).
    media_image: str = ""
    media_inserted: bool = False
    media_boot_targets: tuple[str, ...] = ("Cd",)
    boot_once_virtual_cd: bool = False
    powered_on_at: float | None = None  # lab time the host last started POST
    on_boot: list[BootHook] = field(default_factory=list)
    on_power_off: list[PowerOffHook] = field(default_factory=list)
    # Called when the BMC restarts into a new image (lab.rack: a switch tray's bundle restarts
    # NVOS with it, and its NVLink fabric forms again).
    on_bmc_restart: list[PowerOffHook] = field(default_factory=list)
    _timers: list[tuple[float, int, Callable[[], None]]] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _seq: itertools.count = field(default_factory=lambda: itertools.count(1))

    # -- time -------------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        """Apply every scheduled effect that is due at lab time `now`, in order."""
        # The hall ticks every node 20 times a second: a node with nothing due answers without
        # its lock (the heap's head is read whole under the GIL). Locked and sorted every tick,
        # 5,000 nodes took a tenth of a core of the lab's, on the cores a benchmark measures.
        timers = self._timers
        if not timers or timers[0][0] > now:
            return
        while True:
            with self._lock:
                if not timers or timers[0][0] > now:
                    return
                _, _, effect = heapq.heappop(timers)
                effect()

    def _after(self, now: float, seconds: float, effect: Callable[[], None]) -> None:
        # A heap by (due, sequence): the sequence is unique, so effects are never compared.
        heapq.heappush(self._timers, (now + seconds, next(self._seq), effect))

    def schedule(self, now: float, seconds: float, effect: Callable[[], None]) -> None:
        """Run `effect` at lab time `now + seconds` (lab.rack's effects across members)."""
        with self._lock:
            self._after(now, seconds, effect)

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
                self.powered_on_at = now
            elif reset_type in ("On", "ForceOn"):
                return ""  # already on or on its way: nothing to do
            elif reset_type in ("ForceOff", "GracefulShutdown", "PushPowerButton"):
                if self.power in ("Off", "PoweringOff"):
                    return ""
                self._interrupt_flash(now)
                delay = (
                    POWER_OFF_SECONDS if reset_type != "GracefulShutdown" else GRACEFUL_OFF_SECONDS
                )
                self.power = "PoweringOff"
                self._after(now, delay * self._slowness(), self._off)
            elif reset_type in ("ForceRestart", "GracefulRestart", "PowerCycle"):
                if self.power == "Off":
                    return "the system is off; power it on instead"
                self._interrupt_flash(now)
                self.power = "PoweringOff"
                slow = self._slowness()
                self.powered_on_at = now + POWER_OFF_SECONDS * slow
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
        self._run_scheduled_jobs()
        for component, version in self.firmware_staged.items():
            self.firmware_previous[component] = self.firmware[component]
            self.firmware[component] = version
        self.firmware_staged.clear()
        target = "Hdd"
        if self.boot_enabled in ("Once", "Continuous") and self.boot_target != "None":
            target = self.boot_target
            if self.boot_enabled == "Once":
                self.boot_enabled, self.boot_target = "Disabled", "None"
        target = self._boot_device(target)
        self.power = "On"
        self.boot_count += 1
        self.last_boot_target = target
        if target == NOTHING_TO_BOOT:
            return  # the host sits at "no bootable device": nothing starts
        for hook in list(self.on_boot):
            hook(self, target)

    def _boot_device(self, target: str) -> str:
        """What a boot towards `target` starts: "Cd" only from the virtual medium."""
        if self.boot_once_virtual_cd:
            self.boot_once_virtual_cd = False  # iDRAC's one-time boot, consumed by this boot
            target = "Cd"
        elif target not in CD_TARGETS:
            return target
        elif target not in self.media_boot_targets or (
            target == "Cd" and self.faults.has("idrac_before_6")
        ):
            # Supermicro's "Cd" and iDRAC's before 6.0 boot the physical drive, which is empty.
            return NOTHING_TO_BOOT
        return "Cd" if self.media_inserted else NOTHING_TO_BOOT

    def insert_media(self, image: str, now: float, mount_seconds: float = 0.0) -> None:
        """Put `image` in the virtual CD; it reads Inserted after `mount_seconds`."""
        with self._lock:
            self.media_image = image
            self.media_inserted = mount_seconds <= 0
            if not self.media_inserted:
                self._after(now, mount_seconds, lambda: self._mounted(image))

    def _mounted(self, image: str) -> None:
        if self.media_image == image:  # not ejected or replaced meanwhile
            self.media_inserted = True

    def eject_media(self) -> None:
        """Take the medium out of the virtual CD."""
        with self._lock:
            self.media_image, self.media_inserted = "", False

    def in_post(self, now: float, seconds: float) -> bool:
        """Whether the host started POST less than `seconds` ago."""
        started = self.powered_on_at
        return started is not None and started <= now < started + seconds

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

    def scp_job(self, now: float) -> str:
        """iDRAC's job for a Server Configuration Profile import, done at once: the lab's only
        profile sets the one-time boot to the virtual CD, which needs no reboot."""
        with self._lock:
            task = self._new_task("scp", "", "", now, now, prefix="JID_")
            task.state, task.percent = "Completed", 100
            task.message = "Successfully imported and applied Server Configuration Profile."
            return task.id

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

    def start_update(
        self,
        component: str,
        version: str,
        now: float,
        *,
        progress: str = "task",
        activation: str = "host_reset",
    ) -> LabTask | None:
        """Start a firmware update; it completes after UPDATE_SECONDS lab seconds.

        `progress` is how the BMC reports it (flavours.Flavour.update_progress): a task, an
        iDRAC job ("dell_job"), iLO's flash state ("hpe_flash": no task, None is returned).
        """
        if component not in FIRMWARE_COMPONENTS:
            raise ValueError(f"unknown firmware component {component!r}")
        with self._lock:
            if progress == "dell_job":
                self._refuse_if_queue_busy()
            self.flashes.append(component)
            if progress == "hpe_flash":
                self._start_flash(component, version, now, activation)
                return None
            fails = self.faults.param("firmware_update_fails") == component
            prefix = "JID_" if progress == "dell_job" else ""
            task = self._new_task(
                "firmware", component, version, now, now + UPDATE_SECONDS[component], prefix=prefix
            )
            task.fails = fails
            task.activation = activation
            # iDRAC applies every package but its own during the host's next POST.
            task.waits_for_host = progress == "dell_job" and activation == "host_reset"
            self._after(now, UPDATE_SECONDS[component], lambda: self._finish_update(task))
            return task

    def _refuse_if_queue_busy(self) -> None:
        """iDRAC: a job pending (Scheduled, or the BIOS configuration job) refuses a new one
        with LC068, a running one with RAC0679 (sushy tests/oem/dell/unit/json_samples/
        error_pending_job.json, error_running_job.json); DeleteJobQueue clears both."""
        jobs = [t for t in self.tasks.values() if t.id.startswith("JID_")]
        if self.bios_job or any(t.state == "Scheduled" for t in jobs):
            raise JobQueueBusy("IDRAC.2.8.LC068")
        if any(t.state == "Running" for t in jobs):
            raise JobQueueBusy("IDRAC.2.8.RAC0679")

    def clear_job_queue(self) -> None:
        """DellJobService.DeleteJobQueue with JID_CLEARALL: every job goes, staged BIOS values
        stay staged (without a job they are not applied)."""
        with self._lock:
            for task_id in [t for t in self.tasks if t.startswith("JID_")]:
                task = self.tasks.pop(task_id)
                task.fails, task.state = True, "Cancelled"  # a timer still due finds it gone
            self.bios_job = None

    def _finish_update(self, task: LabTask) -> None:
        if task.state == "Cancelled" or self.tasks.get(task.id) is not task:
            return  # deleted from the queue, or forgotten by a BMC reset
        if task.fails:
            task.state, task.message = "Exception", f"{task.component} image failed verification"
            return
        if task.waits_for_host:
            task.state, task.percent = "Scheduled", 0
            task.message = "Job scheduled: runs at the next host reboot"
            return
        task.state, task.percent = "Completed", 100
        self._written(task.component, task.version, task.activation)
        task.message = {
            "now": "BMC updated and restarted",
            "host_reset": "Update staged: applies at the next host reset",
        }.get(task.activation, f"Update written: pending activation ({task.activation})")
        if task.activation == "now" and self.forgets_tasks_on_bmc_reset:
            self._bmc_restarted()

    def _written(self, component: str, version: str, activation: str) -> None:
        """A written image: running now, at the next host boot, or at its activation."""
        if activation == "now":
            # A BMC flashes and reboots itself: the new version runs as soon as it is back.
            self.firmware_previous[component] = self.firmware[component]
            self.firmware[component] = version
        elif activation == "host_reset":
            self.firmware_staged[component] = version
        else:
            self.firmware_pending[component] = (version, activation)

    def _run_scheduled_jobs(self) -> None:
        """iDRAC: the host's POST runs every Scheduled job; its package is applied."""
        for task in self.tasks.values():
            if task.state == "Scheduled" and task.waits_for_host:
                task.state, task.percent = "Completed", 100
                task.message = "Job completed successfully."
                self.firmware_previous[task.component] = self.firmware[task.component]
                self.firmware[task.component] = task.version

    def _bmc_restarted(self) -> None:
        if self.forgets_tasks_on_bmc_reset:
            self.tasks.clear()
        self.sessions.clear()
        for hook in list(self.on_bmc_restart):
            hook(self)

    def activate(self, activation: str, now: float) -> None:
        """An aux power cycle ("aux_power") or manager reset ("manager_reset"): the images
        waiting for it run; the BMC restarts. An aux power cycle leaves the host off."""
        with self._lock:
            for component, (version, how) in list(self.firmware_pending.items()):
                if how == activation:
                    self.firmware_previous[component] = self.firmware[component]
                    self.firmware[component] = version
                    del self.firmware_pending[component]
            self._bmc_restarted()
            if activation == "aux_power" and self.power != "Off":
                self._interrupt_flash(now)
                self._off()

    # -- iLO flash state ----------------------------------------------------------------------

    def _start_flash(self, component: str, version: str, now: float, activation: str) -> None:
        flash = self.hpe_flash
        if flash is not None and flash.state not in ("Complete", "Error", "Idle"):
            raise JobQueueBusy("iLO.2.14.UpdateInProgress")
        flash = HpeFlash(component, version, now, now + UPDATE_SECONDS[component], activation)
        self.hpe_flash = flash
        self._after(now, UPDATE_SECONDS[component], lambda: self._finish_flash(flash))

    def _finish_flash(self, flash: HpeFlash) -> None:
        if self.hpe_flash is not flash or flash.state == "Error":
            return
        if self.faults.param("firmware_update_fails") == flash.component:
            flash.state = "Error"
            return
        flash.state, flash.percent = "Complete", 100
        self._written(flash.component, flash.version, flash.activation)

    def _interrupt_flash(self, now: float) -> None:
        """iLO: taking the host's power away while the ROM is written fails the flash."""
        flash = self.hpe_flash
        if flash is not None and flash.state not in ("Complete", "Error", "Idle"):
            if flash.component != "bmc":
                flash.state = "Error"

    def flash_view(self, now: float) -> HpeFlash | None:
        """The iLO flash state with its progress brought up to date."""
        with self._lock:
            flash = self.hpe_flash
            if flash is not None and flash.state not in ("Complete", "Error", "Idle"):
                share = (now - flash.started) / max(flash.finishes - flash.started, 1e-9)
                flash.percent = min(99, int(100 * share))
                flash.state = next(name for limit, name in HPE_FLASH_STEPS if share < limit or
                                   limit == 1.0)  # fmt: skip
            return flash

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
