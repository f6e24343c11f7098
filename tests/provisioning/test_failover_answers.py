"""What the node plane and the engine do when the database or Redis goes away mid-request
(issue 33): nothing that committed is answered with an error the caller cannot retry.

Found by the control-plane failover test (tests/ha/test_control_plane_failover.py): an agent's
check-in that committed, and then lost the database or the broker, answered 500; its retry was
refused (the boot credential was spent) and the node's boot was lost. A Redis failover refused
every iPXE script (the scan guard's counts are in Redis), and a node's firmware gives up on its
network boot after a few tries.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.utils import timezone

from greenlight.celery import app
from lab.processes import free_port
from provisioning.agents import sessions
from provisioning.agents.api import views as agent_views
from provisioning.agents.intervals import poll_interval
from provisioning.choices import RunStatus
from provisioning.core.sweep import sweep
from provisioning.models import AgentSession, Run
from provisioning.scheduling import nudge
from tests.factories import make_node
from tests.support.scenes import booted_secret, make_run

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

LOST = "terminating connection due to unexpected postmaster exit"


def _checkin(client: Client, node, secret: str, boot_id: str = "boot-1"):
    body = {
        "serial": node.serial,
        "macs": node.mac_addresses,
        "boot_id": boot_id,
        "environment": "ephemeral",
        "credential": secret,
    }
    return client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")


@pytest.fixture
def booted(rack, manifest):
    """A node whose run ordered a network boot, and the secret the boot carries."""
    node = make_node(rack=rack)
    return node, booted_secret(make_run(node, phases_done=2))


def test_a_check_in_that_committed_gets_its_token_though_the_database_went_away(
    booted, monkeypatch
):
    node, secret = booted
    committed, gone, tried = agent_views.check_in, [], []

    def check_in_then_failover(*args, **kwargs):
        answer = committed(*args, **kwargs)
        gone.append(True)  # the database goes away just after the check-in committed
        return answer

    def database_gone(execute, sql, params, many, context):
        if gone:
            tried.append(sql)
            raise OperationalError(LOST)
        return execute(sql, params, many, context)

    monkeypatch.setattr(agent_views, "check_in", check_in_then_failover)
    with connection.execute_wrapper(database_gone):
        answer = _checkin(Client(), node, secret)

    assert gone
    assert answer.status_code == 200, answer.content
    assert tried == []  # nothing after the commit needs the database
    # The interval was worked out before the commit: what a read now gives, a boot's first.
    assert answer.json()["poll_s"] == poll_interval(node.pk)
    assert AgentSession.objects.get(node=node).boot_id == "boot-1"


def test_a_check_in_that_failed_before_it_committed_can_be_tried_again(booted, monkeypatch):
    node, secret = booted
    nudges = sessions.nudge_runs_of

    def database_gone(node) -> None:
        raise OperationalError(LOST)

    monkeypatch.setattr(sessions, "nudge_runs_of", database_gone)
    assert _checkin(Client(raise_request_exception=False), node, secret).status_code == 500
    # Nothing of it stayed: the boot credential is not spent, and the agent's retry is taken.
    assert not AgentSession.objects.filter(node=node).exists()
    monkeypatch.setattr(sessions, "nudge_runs_of", nudges)
    assert _checkin(Client(), node, secret).status_code == 200


@pytest.fixture
def dead_broker():
    """The app's broker is a port nobody listens on: a real refusal, as while Redis fails over."""
    previous = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
    app._pool = None
    app.amqp._producer_pool = None
    try:
        yield
    finally:
        app.conf.broker_url = previous
        app._pool = None
        app.amqp._producer_pool = None


def test_a_look_the_broker_refuses_is_left_to_the_sweep(booted, dead_broker):
    node, _ = booted
    run = Run.objects.get(node=node)
    overdue = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.WAITING, next_look_at=overdue)

    nudge(run.pk)  # an agent's report asks for a look; the broker refuses the send

    run.refresh_from_db()
    assert run.nudged_at is not None
    # The row says the look is due: the sweep finds it and sends it (refused again, quietly).
    assert sweep() == 1


def test_a_booting_node_gets_its_ipxe_script_while_redis_is_away(booted, settings):
    node, secret = booted
    # The cache (the scan guard's counts) is a Redis that refuses connections.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }
    answer = Client().get("/boot/v1/ipxe", {"mac": node.mac_addresses[0]})

    assert answer.status_code == 200, answer.content
    assert secret in answer.content.decode()
