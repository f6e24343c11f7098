"""Celery tasks: thin shells that take ids and call the engine."""

from __future__ import annotations

from celery import shared_task
from celery.signals import before_task_publish, worker_shutdown

from .admission import admit_held_runs
from .core import engine
from .core.sweep import dispatch_due, queue_lag_s, stamp_sent_at
from .core.sweep import sweep as sweep_runs
from .day2 import rollouts
from .day2.rollouts import ADVANCE_ROLLOUT_TASK

# Declared beside the call it makes; imported here, where Celery's autodiscovery looks for tasks.
from .day2.scheduler_calls import tell_scheduler_task
from .rack import power as rack_power
from .rack import runs as rack_runs
from .rack import verify as rack_verify
from .rack.messages import (
    ADVANCE_RACK_RUN_TASK,
    POWER_CYCLE_MEMBER_TASK,
    VERIFY_RACK_STAGE_TASK,
)
from .redfish.bmc import session_pool
from .scheduling import ADVANCE_RUN_TASK
from .site_work import hold_runs_of_unserved_sites

SWEEP_TASK = "provisioning.tasks.sweep"
__all__ = ["advance_run", "sweep", "tell_scheduler_task"]


@shared_task(name=ADVANCE_RUN_TASK, bind=True)
def advance_run(self, run_id: int, step: int) -> None:
    """Take one step of a run, as this worker (the run records who holds it)."""
    engine.advance(run_id, step, worker=self.request.hostname or "")


@shared_task(name=ADVANCE_ROLLOUT_TASK)
def advance_rollout(rollout_id: int) -> None:
    """Settle a rollout's ended runs and start its next nodes."""
    rollouts.advance_rollout(rollout_id)


@shared_task(name=ADVANCE_RACK_RUN_TASK)
def advance_rack_run(rack_run_id: int) -> None:
    """Take a rack run's current stage as far as its rows allow."""
    rack_runs.advance_rack_run(rack_run_id)


@shared_task(name=VERIFY_RACK_STAGE_TASK)
def verify_rack_stage(stage_id: int) -> None:
    """Observe a rack stage's check on its members' BMCs and record the answer."""
    rack_verify.observe_stage(stage_id)


@shared_task(name=POWER_CYCLE_MEMBER_TASK)
def power_cycle_rack_member(member_id: int) -> None:
    """Give one rack member its forced power cycle (once, whatever the redeliveries)."""
    rack_power.power_cycle_member(member_id)


@shared_task(name=SWEEP_TASK, bind=True)
def sweep(self) -> int:
    """Re-send lost steps, send the steps coming due, start the held runs the workers have
    room for and advance open rollouts (Celery beat runs this periodically); return how many
    steps were sent."""
    # A rollout whose wake-up message was lost moves on here.
    rollouts.advance_open_rollouts()
    # Likewise a rack run: a lost wake-up, a check whose observation never came back.
    rack_runs.advance_open_rack_runs()
    # Lost looks first: a look both lost and never sent is re-sent once, by the first.
    resent = sweep_runs(queue_lag_s=queue_lag_s(self.request))
    # Runs of a site whose own workers are all gone wait, and say so.
    hold_runs_of_unserved_sites()
    return resent + dispatch_due() + admit_held_runs()


@before_task_publish.connect
def stamp_sweep_messages(sender=None, headers=None, **_: object) -> None:
    """The sweep measures the queue's lag on its own message: it needs its publishing time."""
    if sender == SWEEP_TASK and headers is not None:
        stamp_sent_at(headers)


@worker_shutdown.connect
def log_out_of_bmcs(**_: object) -> None:
    """A worker going away logs its pooled BMC sessions out: BMCs have few session slots."""
    session_pool().close_all()
