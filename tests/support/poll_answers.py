"""A local HTTP server that answers an agent's polls with nothing to do, on kept connections."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class NothingToDo(BaseHTTPRequestHandler):
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
    """Counts the connections it accepts."""

    daemon_threads = True
    accepted = 0

    def get_request(self):
        request = super().get_request()
        self.accepted += 1
        return request


@contextmanager
def poll_server() -> Iterator[tuple[CountingServer, str]]:
    """The server, running, and its poll URL."""
    server = CountingServer(("127.0.0.1", 0), NothingToDo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}/agent/v1/poll"
    finally:
        server.shutdown()
        server.server_close()
