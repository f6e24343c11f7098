"""The lab runs every node's agent, each with its own async HTTP client, in one process. On every
request httpcore asks sniffio which async library runs it, and falls back to asyncio when sniffio
is missing: missing (anyio 4 no longer brings it), every request searched sys.path for it again,
a tenth of the lab's CPU in the 150-node benchmark. requirements-lab.txt installs it; a node's
agent has it from Debian's python3-httpx."""

from __future__ import annotations

import asyncio
import importlib.abc
import sys

from agent.runner import http_client
from tests.support.poll_answers import poll_server


class _Searches(importlib.abc.MetaPathFinder):
    """Names the import system searched for (modules not already loaded)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name, path, target=None):
        self.names.append(name)
        return None


def test_an_agents_polls_search_for_no_module():
    searches = _Searches()

    async def polls(url: str) -> None:
        async with http_client() as client:
            await client.post(url, json={"known": []})  # whatever loads once, loads here
            sys.meta_path.insert(0, searches)
            try:
                for _ in range(5):
                    assert (await client.post(url, json={"known": []})).status_code == 200
            finally:
                sys.meta_path.remove(searches)

    with poll_server() as (_, url):
        asyncio.run(polls(url))
    assert searches.names == []
