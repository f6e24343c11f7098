"""Quarantining an in-service node answers the browser at once: the scheduler's cordon is a Celery
task sent when the move commits, and the task makes the call and records its event."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from greenlight.celery import app as celery_app
from provisioning.day2.scheduler_calls import (
    TELL_SCHEDULER_TASK,
    tell_scheduler,
    tell_scheduler_task,
)
from tests import factories

pytestmark = pytest.mark.django_db
REASON = "fan noise on GPU 3"
CORDON_LINE = f"greenlight: quarantined: {REASON}"


@pytest.fixture
def in_service(rack, manifest, settings):
    settings.GREENLIGHT_SCHEDULER = "lab"
    node = factories.make_node(rack=rack, hostname="gpu-017")
    Node.objects.filter(pk=node.pk).update(state=NodeState.IN_SERVICE)  # set-up only
    node.refresh_from_db()
    return node


def scheduler_events(node: Node) -> list[str]:
    return list(
        Event.objects.filter(node=node, actor_label="scheduler").values_list("message", flat=True)
    )


def take_from_queue(name: str, args: list) -> bool:
    """Take the message of task `name` with `args` off the worker's queue; True if it was there."""
    queue = celery_app.conf.task_default_queue
    with celery_app.connection_for_read() as connection:
        simple = connection.SimpleQueue(queue)
        try:
            while True:
                try:
                    message = simple.get(block=True, timeout=2)
                except simple.Empty:
                    return False
                message.ack()  # a message for no worker of this test session
                if message.headers.get("task") == name and message.payload[0] == args:
                    return True
        finally:
            simple.close()


def test_the_quarantine_answers_before_the_scheduler_is_called(
    client, bob, in_service, django_capture_on_commit_callbacks
):
    client.force_login(bob)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            reverse("console:node-quarantine", args=[in_service.pk]), {"reason": REASON}
        )
    assert response.status_code == 302
    in_service.refresh_from_db()
    assert in_service.state == NodeState.QUARANTINED
    # The request committed the move and sent a task: it called no scheduler itself.
    assert callbacks and scheduler_events(in_service) == []
    assert take_from_queue(TELL_SCHEDULER_TASK, [in_service.pk, "cordon", CORDON_LINE])

    # What the worker then runs: the call, and the event that says what the scheduler did.
    assert tell_scheduler_task(in_service.pk, "cordon", CORDON_LINE) is True
    assert scheduler_events(in_service) == [
        f"cordoned as gpu-017 in the lab scheduler: {CORDON_LINE}"
    ]


def test_with_eager_tasks_the_quarantine_cordons_and_records_it(
    client, bob, in_service, eager_celery, django_capture_on_commit_callbacks
):
    client.force_login(bob)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("console:node-quarantine", args=[in_service.pk]), {"reason": REASON})
    event = Event.objects.get(node=in_service, actor_label="scheduler")
    assert event.kind == EventKind.UPDATED
    assert event.data == {"scheduler": "lab", "action": "cordon", "node_name": "gpu-017"}


def test_no_scheduler_configured_sends_no_task(
    client, bob, in_service, settings, django_capture_on_commit_callbacks
):
    settings.GREENLIGHT_SCHEDULER = ""
    client.force_login(bob)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post(reverse("console:node-quarantine", args=[in_service.pk]), {"reason": REASON})
    sends = [c for c in callbacks if getattr(c, "__qualname__", "").startswith("_send_on_commit")]
    assert sends == []


def test_the_task_of_a_deleted_node_and_an_unknown_verb(in_service):
    assert tell_scheduler_task(999_999, "cordon", CORDON_LINE) is False
    with pytest.raises(ValueError, match="unknown scheduler verb 'drain'; known: cordon, resume"):
        tell_scheduler(in_service, "drain")
