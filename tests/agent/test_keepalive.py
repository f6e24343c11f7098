"""The agent keeps its connection to Greenlight between polls that come tens of seconds apart:
httpx's default dropped it after 5 s, and every poll after a longer pause set up TCP (and, to a
real node plane, TLS) again. The server counts the connections it accepts."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from agent.runner import KEEPALIVE_S, http_client

# Longer than httpx's default keep-alive (5 s); the agent's own is far longer.
PAUSE_S = 6.5


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection open between requests

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"commands": [], "poll_s": 30}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class CountingServer(ThreadingHTTPServer):
    daemon_threads = True
    accepted = 0

    def get_request(self):
        request = super().get_request()
        self.accepted += 1
        return request


def _polls_apart(client: httpx.AsyncClient, url: str) -> None:
    async def polls() -> None:
        async with client:
            assert (await client.post(url, json={"known": []})).status_code == 200
            await asyncio.sleep(PAUSE_S)
            assert (await client.post(url, json={"known": []})).status_code == 200

    asyncio.run(polls())


def test_two_polls_a_pause_apart_share_one_connection():
    assert KEEPALIVE_S > 60  # longer than any interval Greenlight tells (test_poll_keepalive.py)
    server = CountingServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/agent/v1/poll"
    try:
        _polls_apart(http_client(), url)
        assert server.accepted == 1
        # httpx's own default would have opened a second one: the pause is long enough to tell.
        _polls_apart(httpx.AsyncClient(timeout=30.0), url)
        assert server.accepted == 3
    finally:
        server.shutdown()
        server.server_close()
