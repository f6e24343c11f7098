"""Celery tasks: thin shells that take ids and call the engine."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_shutdown

from . import engine
from .sweep import sweep as sweep_runs


@shared_task(name="provisioning.tasks.advance_run")
def advance_run(run_id: int, step: int) -> None:
    """Take one step of a run."""
    engine.advance(run_id, step)


@shared_task(name="provisioning.tasks.sweep")
def sweep() -> int:
    """Re-send lost steps (Celery beat runs this periodically)."""
    return sweep_runs()


@worker_shutdown.connect
def log_out_of_bmcs(**_: object) -> None:
    """A worker going away logs its pooled BMC sessions out: BMCs have few session slots."""
    from .bmc import session_pool

    session_pool().close_all()
