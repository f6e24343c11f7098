"""A real HTTP receiver on loopback for webhook tests: records requests, answers scripted codes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    answers: list[int] = field(default_factory=list)  # status per request; 200 when used up
    received: list[Received] = field(default_factory=list)


@contextmanager
def webhook_receiver(answers: list[int] | None = None) -> Iterator[Receiver]:
    receiver = Receiver(url="", answers=list(answers or []))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.received.append(Received(self.path, dict(self.headers.items()), body))
            status = receiver.answers.pop(0) if receiver.answers else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/greenlight"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
