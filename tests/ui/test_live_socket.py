"""The live WebSocket: who is refused, and how a burst of events becomes one batch per window."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from console.routing import websocket_urlpatterns
from fleet.live import Coalescer, rack_group
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _event(seq: int, node_id: int, state: str, rack_id: int = 1) -> dict:
    return {
        "seq": seq,
        "kind": "state_changed",
        "node": {"id": node_id, "serial": f"SN{node_id}", "state": state, "rack_id": rack_id,
                 "position": node_id},
        "message": "",
        "data": {},
        "actor": "test",
        "created_at": "2025-01-01T00:00:00+00:00",
    }  # fmt: skip


def test_coalescer_keeps_the_latest_change_per_node_and_the_newest_seq():
    buf = Coalescer()
    assert buf.take() is None
    for seq, node, state in [(5, 1, "provisioning"), (6, 2, "provisioning"), (9, 1, "validating")]:
        buf.add(_event(seq, node, state))
    batch = buf.take()
    assert batch["seq"] == 9 and batch["events"] == 3
    assert {k: v["state"] for k, v in batch["nodes"].items()} == {
        "1": "validating",
        "2": "provisioning",
    }
    assert buf.take() is None


async def _connect(path: str, *, user=None, origin: bytes = b"http://127.0.0.1"):
    if user is None:
        from greenlight.asgi import application

        headers = [(b"host", b"127.0.0.1"), (b"origin", origin)]
        communicator = WebsocketCommunicator(application, path, headers=headers)
    else:
        communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
        communicator.scope["user"] = user
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


def test_anonymous_users_are_refused():
    @async_to_sync
    async def run():
        communicator, connected, code = await _connect("/ws/rack/1/")
        await communicator.disconnect()
        return connected, code

    assert run() == (False, 4401)


def test_foreign_origins_are_refused():
    @async_to_sync
    async def run():
        communicator, connected, _ = await _connect("/ws/rack/1/", origin=b"https://evil.example")
        await communicator.disconnect()
        return connected

    assert run() is False


def test_a_user_without_a_role_is_refused(charlie):
    @async_to_sync
    async def run():
        communicator, connected, code = await _connect("/ws/rack/1/", user=charlie)
        await communicator.disconnect()
        return connected, code

    assert run() == (False, 4403)


def test_a_burst_of_events_arrives_at_once_then_as_one_batch(bob, settings):
    # A window far longer than sending the burst takes, however loaded the machine.
    settings.GREENLIGHT_LIVE_COALESCE_MS = 2000
    rack = factories.make_rack("R77").pk

    @async_to_sync
    async def run():
        communicator, connected, _ = await _connect(f"/ws/rack/{rack}/", user=bob)
        assert connected
        layer = get_channel_layer()
        for seq in range(100, 130):
            event = _event(seq, seq % 3, "provisioning" if seq < 129 else "validating", rack)
            await layer.group_send(rack_group(rack), {"type": "live.events", "events": [event]})
        first = await communicator.receive_json_from(timeout=5)
        batch = await communicator.receive_json_from(timeout=5)
        nothing_more = await communicator.receive_nothing(timeout=0.5)
        await communicator.disconnect()
        return first, batch, nothing_more

    first, batch, nothing_more = run()
    # The first event after a quiet spell is not held back; the rest of the burst is folded.
    assert first["seq"] == 100 and first["events"] == 1 and list(first["nodes"]) == ["1"]
    assert batch["type"] == "batch" and batch["seq"] == 129 and batch["events"] == 29
    assert sorted(batch["nodes"]) == ["0", "1", "2"]
    assert batch["nodes"]["0"]["state"] == "validating"  # 129 % 3 == 0, the newest for node 0
    assert nothing_more


def test_live_batches_skip_the_database_connection_hop(bob, monkeypatch):
    import channels.consumer

    hops = []
    real = channels.consumer.aclose_old_connections

    async def counted():
        hops.append(1)
        await real()

    # A spy on Channels' own hop, which still runs: what is counted is when it is taken.
    monkeypatch.setattr(channels.consumer, "aclose_old_connections", counted)
    rack = factories.make_rack("R78").pk

    @async_to_sync
    async def run():
        communicator, connected, _ = await _connect(f"/ws/rack/{rack}/", user=bob)
        assert connected
        before = len(hops)
        layer = get_channel_layer()
        for seq in range(10):
            await layer.group_send(
                rack_group(rack), {"type": "live.events", "events": [_event(seq, 1, "validating")]}
            )
        got = await communicator.receive_json_from(timeout=5)
        await communicator.receive_nothing(timeout=0.3)  # the rest of the burst's batch, if any
        during = len(hops)
        await communicator.disconnect()
        return before, during, got

    before, during, got = run()
    assert got["type"] == "batch"
    assert during == before  # ten live messages, no hop
    assert before >= 1  # connect took it: its permission check reads the database
