"""The live publisher: the caller never waits for Redis, and what queues meanwhile goes out together.

Sent one by one, the 1,482 events of a 741-node rack start reached browsers up to 25 s late. Here
a private Redis refuses writes (CLIENT PAUSE WRITE, for real) while events are published: each
call returns at once, and once Redis answers, every event arrives, in order, in at most two
messages per group (the one already under way, then all the rest).
"""

from __future__ import annotations

import asyncio

from channels_redis.core import RedisChannelLayer

from fleet.live import FLEET_GROUP, LivePublisher, rack_group

EVENTS = 200


def _payload(seq: int) -> dict:
    node = {"id": seq % 7, "serial": f"SN{seq % 7}", "state": "provisioning", "rack_id": 5,
            "position": seq % 7}  # fmt: skip
    return {"seq": seq, "kind": "phase_done", "node": node, "message": "", "data": {},
            "actor": "worker", "created_at": "2026-11-22T00:00:00+00:00"}  # fmt: skip


def test_events_published_while_redis_is_paused_arrive_together_and_in_order(
    private_redis, settings
):
    url, admin = private_redis
    config = dict(settings.CHANNEL_LAYERS["default"]["CONFIG"])
    config["hosts"] = [{**config["hosts"][0], "address": url}]
    settings.CHANNEL_LAYERS = {"default": {**settings.CHANNEL_LAYERS["default"], "CONFIG": config}}
    sender = LivePublisher()
    sender.SEND_TIMEOUT_S = 60  # the pause below must not look like a dead Redis

    async def scenario() -> tuple[bool, list[list[int]]]:
        watcher = RedisChannelLayer(**config)
        channel = await watcher.new_channel()
        await watcher.group_add(rack_group(5), channel)
        admin.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
        try:
            for seq in range(1, EVENTS + 1):
                sender.publish_event(_payload(seq), [FLEET_GROUP, rack_group(5)])
            # Every call returned while no send could finish: nobody waited for Redis.
            still_sending = not sender.flush(timeout=0)
        finally:
            admin.execute_command("CLIENT", "UNPAUSE")
        assert sender.flush(timeout=60)
        messages: list[list[int]] = []
        while sum(map(len, messages)) < EVENTS:
            message = await asyncio.wait_for(watcher.receive(channel), timeout=30)
            assert message["type"] == "live.events"
            messages.append([event["seq"] for event in message["events"]])
        await watcher.flush()
        await watcher.close_pools()
        return still_sending, messages

    still_sending, messages = asyncio.run(scenario())
    assert still_sending
    assert [seq for batch in messages for seq in batch] == list(range(1, EVENTS + 1))
    assert len(messages) <= 2
