"""A rack run and a rack decision take the rack's row lock first, so they queue instead of
deadlocking (issue 34): an advance that started a member and then moved the rack, while a
tray's quarantine held the rack and waited for that member's row, was a PostgreSQL deadlock.

Real PostgreSQL row locks, real threads with their own connections; SQLite serializes writers
and has no row locks to order.
"""

from __future__ import annotations

import threading

import pytest
from django.db import DatabaseError, connection, connections, transaction

from fleet.models import Node, RackSystem
from provisioning.choices import RackRunStatus
from provisioning.rack.runs import advance_rack_run, cancel_rack_run, start_rack_run
from provisioning.rack_models import RackRun
from tests import factories

from .test_rack_runs import DONE, RUNNING, T0, flash_and_succeed, in_flight, statuses

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="row locks are PostgreSQL's; SQLite has none"
    ),
]


def _in_own_connection(work) -> threading.Thread:
    """Run `work` in a thread with its own database connection (closed after)."""

    def target():
        try:
            work()
        finally:
            connections.close_all()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _free(model, pk: int) -> bool:
    """Whether another connection could lock the row now (NOWAIT: no waiting)."""
    free: list[bool] = []

    def probe():
        try:
            with transaction.atomic():
                rows = model.objects.select_for_update(nowait=True, of=("self",)).filter(pk=pk)
                list(rows.values("pk"))
            free.append(True)
        except DatabaseError:
            free.append(False)

    _in_own_connection(probe).join(30)
    return free == [True]


def _holding_the_rack(system: RackSystem, while_held) -> None:
    """What a rack decision does first (acceptance.rack_decisions._lock), held meanwhile."""
    with transaction.atomic():
        list(RackSystem.objects.select_for_update().filter(pk=system.pk).values("pk"))
        while_held()


def test_an_advance_waits_behind_a_rack_decision_holding_no_row_of_its_own(bob):
    system, nodes = factories.make_nvl72_rack()
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    # The first shelf's run passes: the next advance starts the second shelf (its node's row).
    flash_and_succeed(in_flight(rack_run, 0)[0].run)
    second_shelf = nodes["power_shelf"][1]
    seen: dict[str, object] = {}

    def meanwhile():
        advancing = _in_own_connection(lambda: advance_rack_run(rack_run.pk, now=T0))
        advancing.join(2.0)
        seen["waited"] = advancing.is_alive()
        # Waiting, it holds nothing a tray's quarantine would wait for.
        seen["rack run free"] = _free(RackRun, rack_run.pk)
        seen["shelf free"] = _free(Node, second_shelf.pk)
        seen["advancing"] = advancing

    _holding_the_rack(system, meanwhile)
    advancing = seen.pop("advancing")
    assert seen == {"waited": True, "rack run free": True, "shelf free": True}
    advancing.join(30)  # type: ignore[attr-defined]
    # The rack let go: the advance went on and started the second shelf.
    assert statuses(rack_run, 0)[:2] == [DONE, RUNNING]


def test_a_cancel_waits_behind_a_rack_decision_holding_no_row_of_its_own(bob):
    system, _ = factories.make_nvl72_rack()
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    seen: dict[str, object] = {}

    def meanwhile():
        cancelling = _in_own_connection(
            lambda: cancel_rack_run(rack_run, actor=bob, reason="wrong manifest", now=T0)
        )
        cancelling.join(2.0)
        seen["waited"] = cancelling.is_alive()
        seen["rack run free"] = _free(RackRun, rack_run.pk)
        seen["cancelling"] = cancelling

    _holding_the_rack(system, meanwhile)
    cancelling = seen.pop("cancelling")
    assert seen == {"waited": True, "rack run free": True}
    cancelling.join(30)  # type: ignore[attr-defined]
    assert RackRun.objects.get(pk=rack_run.pk).status == RackRunStatus.CANCELLED
