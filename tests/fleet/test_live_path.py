"""The live path end to end: a task in a real Celery worker moves a node, and a WebSocket client
watching the node's rack receives the change through the Redis channel layer.

Also: the WebSocket refuses anonymous users and pages from foreign origins.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from fleet.tasks import transition_node
from greenlight.asgi import application
from tests import factories
from tests.support.processes import celery_worker

# A browser sends both: the page's origin and the host it opens the socket on.
HOST = (b"host", b"localhost")
ORIGIN = (b"origin", b"http://localhost")
# Bounded wait for a real condition: the worker's message arriving, not a guess at its timing.
RECEIVE_TIMEOUT_S = 30


def session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    value = client.cookies[settings.SESSION_COOKIE_NAME].value
    return (b"cookie", f"{settings.SESSION_COOKIE_NAME}={value}".encode())


def mentions(message: dict[str, Any], node: Node, state: str) -> bool:
    """True if a live message says `node` is now in `state` (a single event or a batch)."""
    if message.get("type") == "batch":
        change = message.get("nodes", {}).get(str(node.pk))
        return change is not None and change["state"] == state
    summary = message.get("node") or {}
    return summary.get("id") == node.pk and summary.get("state") == state


async def _watch_rack_while(rack_id: int, headers: list, action) -> list[dict]:
    """Connect to the rack's socket, run `action`, and collect messages until the node shows."""
    communicator = WebsocketCommunicator(application, f"/ws/rack/{rack_id}/", headers=headers)
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    try:
        node, state = await sync_to_async(action)()
        received = []
        while not any(mentions(m, node, state) for m in received):
            received.append(await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT_S))
        return received
    finally:
        await communicator.disconnect()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_worker_task_reaches_a_websocket_watching_the_rack(bob, tmp_path):
    rack = factories.make_rack()
    node = factories.make_node(rack=rack, bmc_password="live-path-secret")
    headers = [session_cookie(bob), HOST, ORIGIN]

    def move():
        transition_node.delay(node.pk, NodeState.PROVISIONING, "started by the live-path test")
        return node, NodeState.PROVISIONING

    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log, celery_worker(concurrency=2, log=log) as worker:
        messages = async_to_sync(_watch_rack_while)(rack.pk, headers, move)
        assert worker.poll() is None

    assert any(mentions(m, node, NodeState.PROVISIONING) for m in messages)
    node.refresh_from_db()
    assert node.state == NodeState.PROVISIONING
    event = Event.objects.get(node=node, kind=EventKind.STATE_CHANGED)
    assert event.actor_label == "worker"
    assert event.message == "started by the live-path test"
    assert "fleet.tasks.transition_node" in log_path.read_text()
    assert "live-path-secret" not in log_path.read_text()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_socket_on_another_rack_hears_nothing(bob):
    watched = factories.make_rack("R02")
    other = factories.make_node(rack=factories.make_rack("R03"))
    headers = [session_cookie(bob), HOST, ORIGIN]

    async def scenario():
        communicator = WebsocketCommunicator(
            application, f"/ws/rack/{watched.pk}/", headers=headers
        )
        connected, _ = await communicator.connect(timeout=10)
        assert connected
        await sync_to_async(transition_node)(other.pk, NodeState.PROVISIONING)
        # The publish happened before this returns (on_commit runs at the end of the task's
        # transaction), so an empty socket now means the message went to the other rack only.
        assert await communicator.receive_nothing(timeout=1)
        await communicator.disconnect()

    async_to_sync(scenario)()


@pytest.fixture
def memory_layer(settings):
    """An in-memory channel layer, for the checks that refuse a socket before it joins a group.

    A refused consumer never reaches the layer; with Redis its pending read would only delay
    the test by the client's socket timeout when it is torn down.
    """
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


async def _connect(path: str, headers: list) -> tuple[bool, int | None]:
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=10)
    if connected:
        await communicator.disconnect()
    else:
        # As a real server does after a refusal: tell the app the socket is gone, so it ends.
        await communicator.send_input({"type": "websocket.disconnect", "code": code})
        await communicator.wait(timeout=10)
    return connected, code


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_anonymous_socket_is_refused(rack, memory_layer):
    connected, code = async_to_sync(_connect)(f"/ws/rack/{rack.pk}/", [HOST, ORIGIN])
    assert not connected
    assert code == 4401


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_socket_from_a_foreign_origin_is_refused(bob, rack, memory_layer):
    headers = [session_cookie(bob), HOST, (b"origin", b"https://evil.example")]
    connected, _ = async_to_sync(_connect)(f"/ws/rack/{rack.pk}/", headers)
    assert not connected


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_signed_in_socket_from_an_allowed_origin_is_accepted(bob, rack, memory_layer):
    connected, _ = async_to_sync(_connect)(
        f"/ws/rack/{rack.pk}/", [session_cookie(bob), HOST, ORIGIN]
    )
    assert connected
