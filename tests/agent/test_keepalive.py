"""The agent keeps its connection to Greenlight between polls that come tens of seconds apart:
httpx's default dropped it after 5 s, and every poll after a longer pause set up TCP (and, to a
real node plane, TLS) again. The server counts the connections it accepts."""

from __future__ import annotations

import asyncio

import httpx

from agent.runner import KEEPALIVE_S, http_client
from tests.support.poll_answers import poll_server

# Longer than httpx's default keep-alive (5 s); the agent's own is far longer.
PAUSE_S = 6.5


def _polls_apart(client: httpx.AsyncClient, url: str) -> None:
    async def polls() -> None:
        async with client:
            assert (await client.post(url, json={"known": []})).status_code == 200
            await asyncio.sleep(PAUSE_S)
            assert (await client.post(url, json={"known": []})).status_code == 200

    asyncio.run(polls())


def test_two_polls_a_pause_apart_share_one_connection():
    assert KEEPALIVE_S > 60  # longer than any interval Greenlight tells (test_poll_keepalive.py)
    with poll_server() as (server, url):
        _polls_apart(http_client(), url)
        assert server.accepted == 1
        # httpx's own default would have opened a second one: the pause is long enough to tell.
        _polls_apart(httpx.AsyncClient(timeout=30.0), url)
        assert server.accepted == 3
