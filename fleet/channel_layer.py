"""The Channels layer for live updates: channels_redis, plus one send to many groups at once.

channels_redis's `group_send` costs four Redis round trips one after another for each group. A
batch of live updates goes to dozens of groups (the fleet, a site, racks, every node's own), and a
Celery worker under load waits for its interpreter lock after every answer: in the 741-node
benchmark the worker's publisher spent nearly half its time waiting for that lock, and updates
reached browsers over half a second late. `group_send_many` sends the same messages, to the same
lists, with the same capacity and expiry rules, in two round trips per Redis host.

It runs channels_redis's own script and calls three of its private helpers:
tests/test_private_api_tripwires.py fails on any channels_redis upgrade, so that the upgrade
re-reads them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict

from channels_redis.core import RedisChannelLayer

logger = logging.getLogger(__name__)

# channels_redis's own group-send script: add the message to each channel's list unless it is
# full; returns how many were full.
GROUP_SEND_LUA = """
    local over_capacity = 0
    local current_time = ARGV[#ARGV - 1]
    local expiry = ARGV[#ARGV]
    for i=1,#KEYS do
        if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + #KEYS]) then
            redis.call('ZADD', KEYS[i], current_time, ARGV[i])
            redis.call('EXPIRE', KEYS[i], expiry)
        else
            over_capacity = over_capacity + 1
        end
    end
    return over_capacity
"""


class LiveChannelLayer(RedisChannelLayer):
    """RedisChannelLayer with `group_send_many`; everything else is channels_redis's."""

    async def group_send_many(self, messages: dict[str, dict]) -> None:
        """Send `messages[group]` to every member of each group: one read, then one write."""
        members = await self._members(list(messages))
        now = time.time()
        pipes: dict[int, object] = {}
        # Per host: each group and the position of its script's reply in the pipeline's replies.
        scripts: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for group, channels in members.items():
            if not channels:
                continue
            by_host, keyed_message, capacity = self._map_channel_keys_to_connection(
                channels, messages[group]
            )
            for index, keys in by_host.items():
                pipe = pipes.get(index)
                if pipe is None:
                    pipe = pipes[index] = self.connection(index).pipeline(transaction=False)
                for key in keys:  # messages past their expiry, as channels_redis drops them
                    pipe.zremrangebyscore(key, min=0, max=int(now) - int(self.expiry))
                args = [keyed_message[k] for k in keys] + [capacity[k] for k in keys]
                pipe.eval(GROUP_SEND_LUA, len(keys), *keys, *args, now, self.expiry)
                scripts[index].append((group, len(pipe) - 1))
        hosts = list(pipes)
        replies = await asyncio.gather(*(pipes[i].execute() for i in hosts))
        for index, reply in zip(hosts, replies, strict=True):
            for group, position in scripts[index]:
                if full := reply[position]:
                    logger.warning(
                        "%s channel(s) of group %s full: live update dropped", full, group
                    )

    async def _members(self, groups: list[str]) -> dict[str, list[str]]:
        """Each group's channels, with members past the group expiry removed first."""
        by_host: dict[int, list[str]] = defaultdict(list)
        for group in groups:
            assert self.require_valid_group_name(group)
            by_host[self.consistent_hash(group)].append(group)
        cutoff = int(time.time()) - self.group_expiry
        members: dict[str, list[str]] = {}
        for index, host_groups in by_host.items():
            pipe = self.connection(index).pipeline(transaction=False)
            for group in host_groups:
                pipe.zremrangebyscore(self._group_key(group), min=0, max=cutoff)
                pipe.zrange(self._group_key(group), 0, -1)
            reply = await pipe.execute()
            for group, names in zip(host_groups, reply[1::2], strict=True):
                members[group] = [name.decode("utf8") for name in names]
        return members
