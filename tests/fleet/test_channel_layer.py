"""LiveChannelLayer.group_send_many delivers what one group_send per group would, on a real Redis."""

from __future__ import annotations

import asyncio
import logging
import uuid

from django.conf import settings

from fleet.channel_layer import LiveChannelLayer


def _layer(**overrides) -> LiveChannelLayer:
    config = {**settings.CHANNEL_LAYERS["default"]["CONFIG"], **overrides}
    return LiveChannelLayer(**config)


def test_each_member_of_each_group_gets_its_groups_message_and_empty_groups_cost_nothing():
    prefix = f"test-many-{uuid.uuid4().hex[:8]}"
    web, other_web = _layer(prefix=prefix), _layer(prefix=prefix)

    async def scenario() -> dict[str, list[int]]:
        rack_socket, fleet_socket = await web.new_channel(), await web.new_channel()
        node_socket = await other_web.new_channel()  # another process's list
        await web.group_add("rack-1", rack_socket)
        await web.group_add("fleet", fleet_socket)
        await web.group_add("fleet", rack_socket)
        await other_web.group_add("rack-1", node_socket)
        await other_web.group_add("node-1", node_socket)
        await web.group_send_many(
            {
                "rack-1": {"type": "live.events", "n": 1},
                "node-1": {"type": "live.events", "n": 2},
                "fleet": {"type": "live.events", "n": 3},
                "site-9": {"type": "live.events", "n": 4},  # nobody listens
            }
        )
        got = {}
        for name, layer, channel, count in (
            ("rack", web, rack_socket, 2),
            ("fleet", web, fleet_socket, 1),
            ("node", other_web, node_socket, 2),
        ):
            got[name] = sorted(
                [(await asyncio.wait_for(layer.receive(channel), 10))["n"] for _ in range(count)]
            )
        await web.flush()
        await web.close_pools()
        await other_web.close_pools()
        return got

    assert asyncio.run(scenario()) == {"rack": [1, 3], "fleet": [3], "node": [1, 2]}


def test_a_full_channel_drops_the_message_with_a_warning_naming_its_group(caplog):
    prefix = f"test-full-{uuid.uuid4().hex[:8]}"
    layer, other_web = _layer(prefix=prefix, capacity=2), _layer(prefix=prefix, capacity=2)

    async def scenario() -> tuple[int, int]:
        # Two web processes: the channels of one process share one list.
        full, roomy = await layer.new_channel(), await other_web.new_channel()
        await layer.group_add("rack-2", full)
        await layer.group_add("rack-3", roomy)
        for n in range(2):  # nobody reads rack-2: after these its list is full
            await layer.group_send_many({"rack-2": {"type": "live.events", "n": n}})
        await layer.group_send_many(
            {"rack-3": {"type": "live.events", "n": 9}, "rack-2": {"type": "live.events", "n": 2}}
        )
        redis = layer.connection(0)
        queued = [await redis.zcard(layer.prefix + layer.non_local_name(c)) for c in (full, roomy)]
        await layer.flush()
        await layer.close_pools()
        await other_web.close_pools()
        return tuple(queued)

    with caplog.at_level(logging.WARNING, logger="fleet.channel_layer"):
        assert asyncio.run(scenario()) == (2, 1)
    assert "group rack-2 full: live update dropped" in caplog.text
    assert "rack-3" not in caplog.text
