"""Following a firmware update in flight, the way each vendor reports it: one look at a time.

A BMC that accepted an update reports its progress in one of four ways, and a receipt says which:
a DMTF task monitor or Task (OpenBMC, NVIDIA, Supermicro, AMI, the lab), a Dell iDRAC job
(`JID_...`), HPE iLO's flash state on the UpdateService (no task at all), or nothing. `look()`
reads it once and says, in one word, what the caller may do next.

What sushy's TaskMonitor does not: it treats a 404 as an error and knows no Dell job states, no
HPE flash state and no `OperationTransitionedToJob`; here a vanished monitor means "the inventory
says", a Scheduled Dell job means "reset the host now", and a transition is followed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from . import errors
from .models import TaskState, TaskStatus

if TYPE_CHECKING:
    from .client import RedfishClient


class Tracking(enum.StrEnum):
    """How an accepted update is followed."""

    TASK = "task"  # a task monitor or Task resource (DMTF Task 1.x)
    DELL_JOB = "dell_job"  # an iDRAC job, JID_...
    HPE_FLASH = "hpe_flash"  # UpdateService.Oem.Hpe.State: iLO answers SimpleUpdate with no task
    NONE = "none"  # nothing to follow: the inventory says


@dataclass(frozen=True)
class Receipt:
    """What to look at for an update in flight: how it is tracked, and where (a path or "")."""

    tracking: Tracking
    ref: str = ""


class Progress(enum.StrEnum):
    """What one look found, as the caller acts on it."""

    RUNNING = "running"  # look again later
    NEEDS_HOST_RESET = "needs_host_reset"  # Dell: the job is Scheduled until the host reboots
    DONE = "done"  # the BMC says it finished: activate, then verify
    FAILED = "failed"  # the BMC says it failed, in its own words
    VANISHED = "vanished"  # nothing left to look at: the inventory says, never a failure alone


@dataclass(frozen=True)
class UpdateLook:
    """One look at an update: its progress, percent if given, the BMC's words, and the receipt
    to follow from now on (a task that transitioned to a job names the job)."""

    progress: Progress
    receipt: Receipt
    percent: int | None = None
    words: str = ""


# DMTF TaskState values (Task 1.x), lower case.
RUNNING_STATES = {"new", "starting", "running", "pending", "suspended", "service", "stopping"}
FAILED_STATES = {"exception", "killed", "cancelled", "interrupted", "cancelling"}
# iDRAC JobState values (DellJob 1.x, sushy oem/dell/resources/manager/constants.py); a job that
# is Scheduled waits for the host to reboot: BIOS and NIC packages apply during POST (Ironic
# ironic/drivers/modules/redfish/firmware.py, _handle_bios_task_starting / drac firmware.py).
DELL_WAITING_FOR_RESET = {"scheduled"}
DELL_DONE = {"completed"}
DELL_FAILED = {"failed", "completedwitherrors", "cancelled"}
# iLO 5/6 UpdateService.Oem.Hpe.State (HPE iLO RESTful API reference, "UpdateService"): Complete
# ends a flash; Error and the *Failed states end it badly; Idle means nothing is in flight (iLO
# reads Idle again after it flashed and reset itself).
HPE_DONE = {"complete"}
HPE_FAILED = {"error", "uploadfailed", "verificationfailed", "writingfailed", "flashfailed"}
HPE_IDLE = {"idle"}
# Task 1.x / Base: the task ended by handing the work to a job at MessageArgs[0].
TRANSITIONED_TO_JOB = "OperationTransitionedToJob"


def receipt_for(client: RedfishClient, monitor: str | None) -> Receipt:
    """How to follow an update the BMC accepted, from the monitor its answer named (a
    Staged receipt's task_monitor; None or "" when it named none)."""
    monitor = monitor or ""
    if monitor and _is_dell_job(monitor):
        return Receipt(Tracking.DELL_JOB, monitor)
    if monitor:
        return Receipt(Tracking.TASK, monitor)
    # HPE iLO 5/6 answer SimpleUpdate 200 with no task; the flash state is on the service.
    if _hpe_flash(client) is not None:
        return Receipt(Tracking.HPE_FLASH)
    return Receipt(Tracking.NONE)


def look(client: RedfishClient, receipt: Receipt) -> UpdateLook:
    """One look at an update in flight; never waits."""
    if receipt.tracking is Tracking.HPE_FLASH:
        return _look_hpe(client, receipt)
    if receipt.tracking is Tracking.NONE or not receipt.ref:
        return UpdateLook(Progress.VANISHED, receipt, words="the BMC gave nothing to follow")
    client.open()
    try:
        answer = client.transport.request("GET", receipt.ref)
    except errors.ResourceMissing:
        # OpenBMC answers 202, then 204 once, then 404, and forgets every monitor when it
        # resets; iDRAC purges finished jobs' monitors. Gone is not failed.
        return UpdateLook(Progress.VANISHED, receipt, words="the task monitor is gone")
    body = answer.body or {}
    if answer.status == 204:
        # bmcweb (redfish-core/lib/task.hpp): the one 204 a finished monitor gives.
        return UpdateLook(Progress.DONE, receipt, percent=100)
    if receipt.tracking is Tracking.DELL_JOB or _dell_job_state(body):
        return _from_dell_job(body, replace(receipt, tracking=Tracking.DELL_JOB))
    return _from_task(client, answer.status, body, receipt)


def _from_task(
    client: RedfishClient, status: int, body: dict[str, Any], receipt: Receipt
) -> UpdateLook:
    state = str(body.get("TaskState") or "").lower()
    health = str(body.get("TaskStatus") or "").lower()
    percent = _percent(body.get("PercentComplete"))
    words = _words(body) or str(body.get("TaskState") or status)
    job = _transitioned_job(body)
    if job and job != receipt.ref:
        return look(client, Receipt(Tracking.DELL_JOB if _is_dell_job(job) else Tracking.TASK, job))
    # A task may report Critical while still Running: it has failed (DMTF Task 1.x TaskStatus).
    if health == "critical" or state in FAILED_STATES:
        return UpdateLook(Progress.FAILED, receipt, percent, words)
    if status == 202 or state in RUNNING_STATES:
        return UpdateLook(Progress.RUNNING, receipt, percent, words)
    return UpdateLook(Progress.DONE, receipt, percent if percent is not None else 100, words)


def _from_dell_job(body: dict[str, Any], receipt: Receipt) -> UpdateLook:
    job_state = _dell_job_state(body).lower()
    percent = _percent(body.get("PercentComplete"))
    dell = (body.get("Oem") or {}).get("Dell") or {}
    if percent is None:
        percent = _percent(dell.get("PercentComplete"))
    words = str(dell.get("Message") or body.get("Message") or "") or _words(body) or job_state
    if job_state in DELL_WAITING_FOR_RESET:
        return UpdateLook(Progress.NEEDS_HOST_RESET, receipt, percent, words)
    # A DMTF Job (JobService, where OperationTransitionedToJob points) shares the Task states.
    failed = DELL_FAILED | FAILED_STATES
    if job_state in failed or str(body.get("TaskStatus") or "").lower() == "critical":
        return UpdateLook(Progress.FAILED, receipt, percent, words)
    if job_state in DELL_DONE:
        return UpdateLook(Progress.DONE, receipt, 100, words)
    return UpdateLook(Progress.RUNNING, receipt, percent, words)


def _look_hpe(client: RedfishClient, receipt: Receipt) -> UpdateLook:
    hpe = _hpe_flash(client) or {}
    state = str(hpe.get("State") or "")
    percent = _percent(hpe.get("FlashProgressPercent"))
    if state.lower() in HPE_DONE:
        return UpdateLook(Progress.DONE, receipt, 100, state)
    if state.lower() in HPE_FAILED:
        detail = str(hpe.get("Result", {}).get("MessageId") if hpe.get("Result") else "")
        return UpdateLook(Progress.FAILED, receipt, percent, f"{state} {detail}".strip())
    if state.lower() in HPE_IDLE:
        return UpdateLook(Progress.VANISHED, receipt, percent, state)
    return UpdateLook(Progress.RUNNING, receipt, percent, state or "no flash state")


def _hpe_flash(client: RedfishClient) -> dict[str, Any] | None:
    """UpdateService.Oem.Hpe where the BMC is an iLO that reports a flash state, else None."""
    root = client.root()
    try:
        path = client.link(root, "UpdateService", url="/redfish/v1/")
        service = client.get(path)
    except errors.ResourceMissing:
        return None
    hpe = (service.get("Oem") or {}).get("Hpe")
    return hpe if isinstance(hpe, dict) and "State" in hpe else None


def _is_dell_job(path: str) -> bool:
    return path.rstrip("/").rsplit("/", 1)[-1].upper().startswith("JID_")


def _dell_job_state(body: dict[str, Any]) -> str:
    """JobState of an iDRAC job: a DellJob's own, or a Task's Oem.Dell one; "" if neither."""
    dell = (body.get("Oem") or {}).get("Dell") or {}
    return str(dell.get("JobState") or body.get("JobState") or "")


def _transitioned_job(body: dict[str, Any]) -> str:
    for message in body.get("Messages") or []:
        if not isinstance(message, dict):
            continue
        if str(message.get("MessageId") or "").endswith(TRANSITIONED_TO_JOB):
            args = message.get("MessageArgs") or []
            if args and isinstance(args[0], str):
                return args[0]
    return ""


def _words(body: dict[str, Any]) -> str:
    return "; ".join(
        str(m.get("Message") or m.get("MessageId") or "")
        for m in body.get("Messages") or []
        if isinstance(m, dict)
    )


def _percent(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# -- the TaskService and the Dell job queue -------------------------------------------------


def task_members(client: RedfishClient) -> list[str]:
    """The tasks the BMC's TaskService lists now; empty when it offers no TaskService."""
    root = client.root()
    try:
        service_path = client.link(root, "TaskService", url="/redfish/v1/")
        service = client.get(service_path)
        return client.members(client.link(service, "Tasks", url=service_path))
    except (errors.ResourceMissing, errors.ActionNotSupported):
        return []


def task_status(client: RedfishClient, monitor: str) -> TaskStatus:
    """One look at a task monitor in the coarse terms of TaskStatus (RedfishClient.task_status)."""
    seen = look(client, Receipt(Tracking.DELL_JOB if _is_dell_job(monitor) else Tracking.TASK,
                                monitor))  # fmt: skip
    state = {
        Progress.RUNNING: TaskState.RUNNING,
        Progress.NEEDS_HOST_RESET: TaskState.RUNNING,
        Progress.FAILED: TaskState.FAILED,
    }.get(seen.progress, TaskState.COMPLETED)
    messages = (seen.words,) if seen.words else ()
    return TaskStatus(state=state, raw_state=seen.progress.value, percent=seen.percent,
                      messages=messages)  # fmt: skip


def dell_job_service(client: RedfishClient) -> str | None:
    """The iDRAC's DellJobService path (Manager Links.Oem.Dell), or None on any other BMC."""
    manager = client.get(client.manager_path())
    link = ((manager.get("Links") or {}).get("Oem") or {}).get("Dell", {}).get("DellJobService")
    return link.get("@odata.id") if isinstance(link, dict) else None


def clear_job_queue(client: RedfishClient) -> bool:
    """Delete every iDRAC job (JID_CLEARALL) so a leftover job cannot block a new one (LC068,
    RAC0679); True if a queue was cleared, False on a BMC that has none. Safe to repeat.

    sushy oem/dell/resources/manager/job_service.py `delete_jobs(['JID_CLEARALL'])`; the path
    follows the manager's Links.Oem.Dell.DellJobService (iDRAC 9 6.x: Managers/iDRAC.Embedded.1/
    Oem/Dell/DellJobService, capture dell-idrac9-r750).
    """
    path = dell_job_service(client)
    if path is None:
        return False
    service = client.get(path)
    action = (service.get("Actions") or {}).get("#DellJobService.DeleteJobQueue") or {}
    target = action.get("target") or f"{path.rstrip('/')}/Actions/DellJobService.DeleteJobQueue"
    client.transport.request("POST", target, json={"JobID": "JID_CLEARALL"})
    return True
