"""A rack run's audit and its messages: every step is an event of the rack (or of the member's
node), and every task it sends goes, after commit, to the queue of the rack's site."""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.db import transaction

from fleet.choices import EventKind
from fleet.events import record
from fleet.models import Node

from ..rack_models import RackRun
from ..site_work import site_queue

# Sent by name: provisioning.tasks imports these modules, not the reverse.
ADVANCE_RACK_RUN_TASK = "provisioning.tasks.advance_rack_run"
VERIFY_RACK_STAGE_TASK = "provisioning.tasks.verify_rack_stage"
POWER_CYCLE_MEMBER_TASK = "provisioning.tasks.power_cycle_rack_member"


def say(rack_run: RackRun, message: str, *, node: Node | None = None, **data: Any) -> None:
    """Record one step of the rack run: on the member's node if it is about one, else on the
    rack. Written in the caller's transaction, so a step and its record stand or fall together."""
    record(
        node,
        EventKind.RACK_RUN,
        rack=rack_run.rack,
        actor=rack_run.started_by,
        actor_label="" if rack_run.started_by_id else "rack run",
        message=f"rack run {rack_run.pk}: {message}",
        data={"rack_run": rack_run.pk, **data},
    )


def _send(task: str, args: tuple, queue: str | None = None) -> None:
    routing = {"queue": queue} if queue else {}
    # on_commit: the worker must see the rows that asked for the work.
    transaction.on_commit(lambda: current_app.send_task(task, args, **routing))


def _bmc_queue(rack_run: RackRun) -> str | None:
    # A site with its own workers reaches its BMCs only from its hall (site_work).
    site = rack_run.rack.site
    return site_queue(site.name) if site.own_workers else None


def send_advance(rack_run_id: int) -> None:
    """Ask a worker to advance the rack run once the current transaction commits."""
    _send(ADVANCE_RACK_RUN_TASK, (rack_run_id,))


def send_verify(rack_run: RackRun, stage_id: int) -> None:
    """Ask a worker of the rack's site to observe a stage's check."""
    _send(VERIFY_RACK_STAGE_TASK, (stage_id,), _bmc_queue(rack_run))


def send_power_cycle(rack_run: RackRun, member_id: int) -> None:
    """Ask a worker of the rack's site to power-cycle one member."""
    _send(POWER_CYCLE_MEMBER_TASK, (member_id,), _bmc_queue(rack_run))


def send_to_site(rack_run: RackRun, task: str, args: tuple) -> None:
    """Ask a worker of the rack's site to run `task` (by name) once the transaction commits:
    an app above provisioning reading the rack's BMCs (the rack-wide gate's power shelves)."""
    _send(task, args, _bmc_queue(rack_run))
