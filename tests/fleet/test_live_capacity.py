"""A web process that falls behind loses no live update: the channel layer holds a burst.

Every socket of one web process shares one Redis list; at channels_redis's default capacity of
100 a send beyond it is dropped silently, and a node on an open page stayed stale until its next
change. This sends a burst larger than that to a real Redis before reading any of it.
"""

from __future__ import annotations

import asyncio

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

BURST = 1000


def test_a_burst_of_rack_updates_waits_for_a_slow_reader_whole():
    async def scenario() -> int:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        group = "rack-capacity-test"
        await layer.group_add(group, channel)
        try:
            for seq in range(BURST):
                await layer.group_send(group, {"type": "live.event", "seq": seq})
            received = []
            while len(received) < BURST:
                message = await asyncio.wait_for(layer.receive(channel), timeout=10)
                received.append(message["seq"])
            return sorted(received) == list(range(BURST))
        finally:
            await layer.group_discard(group, channel)

    assert async_to_sync(scenario)()
