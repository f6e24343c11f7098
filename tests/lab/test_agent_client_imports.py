"""The lab runs every node's agent, each with its own async HTTP client, in one process. On every
request httpcore asks sniffio which async library runs it, and falls back to asyncio when sniffio
is missing: missing (anyio 4 no longer brings it), every request searched sys.path for it again,
a tenth of the lab's CPU in the 150-node benchmark. requirements-lab.txt installs it; a node's
agent has it from Debian's python3-httpx."""

from __future__ import annotations

import asyncio
import importlib.abc
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent.runner import http_client


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"commands": [], "poll_s": 2}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class _Searches(importlib.abc.MetaPathFinder):
    """Names the import system searched for (modules not already loaded)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name, path, target=None):
        self.names.append(name)
        return None


def test_an_agents_polls_search_for_no_module():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/agent/v1/poll"
    searches = _Searches()

    async def polls() -> None:
        async with http_client() as client:
            await client.post(url, json={"known": []})  # whatever loads once, loads here
            sys.meta_path.insert(0, searches)
            try:
                for _ in range(5):
                    assert (await client.post(url, json={"known": []})).status_code == 200
            finally:
                sys.meta_path.remove(searches)

    try:
        asyncio.run(polls())
    finally:
        server.shutdown()
        server.server_close()
    assert searches.names == []
