"""A capture served over HTTP with vendors' recorded answers to writes, and a log of each write.

GETs answer from a capture folder (tests/redfish/captures) with the body's @odata.etag as ETag,
as the vendor's BMC served it; a write gets the next recorded answer scripted for its path (a
body from sushy's json_samples, say), else 204. Every request is logged with its headers and
JSON body, so a test reads exactly what the BMC would have been sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from .servers import canonical
from .static import CAPTURES

SAMPLES = "sushy.tests.unit.json_samples"
DELL_SAMPLES = "sushy.tests.oem.dell.unit.json_samples"


def sample(name: str, package: str = SAMPLES) -> dict[str, Any]:
    """One of sushy's recorded vendor answers, read in place from its installed wheel."""
    return json.loads(resources.files(package).joinpath(name).read_text())


@dataclass
class Sent:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Replay:
    """The served capture: scripted answers per (method, canonical path), and what was sent."""

    folder: Path
    answers: dict[tuple[str, str], list[tuple[int, dict[str, Any] | None]]] = field(
        default_factory=dict
    )
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    url: str = ""

    def script(self, method: str, path: str, *answers: tuple[int, dict[str, Any] | None]):
        """Answer the next writes of `method path` with these, in order (then 204)."""
        self.answers.setdefault((method, canonical(path)), []).extend(answers)

    def override(self, path: str, body: dict[str, Any]) -> None:
        """Serve `body` for GET path instead of the capture's (a state the capture lacks)."""
        self.overrides[canonical(path)] = body

    def writes(self) -> list[Sent]:
        """What was sent other than reads and the session's login and logout."""
        return [s for s in self.sent if s.method != "GET" and "/sessions" not in s.path.lower()]

    def body_of(self, path: str) -> dict[str, Any] | None:
        key = canonical(path)
        if key in self.overrides:
            return self.overrides[key]
        relative = key.removeprefix("/redfish/v1").strip("/")
        for file in self.folder.rglob("index.json"):
            here = file.parent.relative_to(self.folder).as_posix()
            if (here if here != "." else "").lower() == relative:
                return json.loads(file.read_text())
        return None


@contextmanager
def replay(capture: str) -> Iterator[Replay]:
    """Serve a capture (plain HTTP on 127.0.0.1) with scripted write answers."""
    state = Replay(folder=CAPTURES / capture)

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            path = self.path.split("?")[0]
            state.sent.append(Sent(self.command, path, dict(self.headers.items()), body))
            if self.command == "GET":
                found = state.body_of(path)
                if found is None:
                    return self._send(404, {"error": {"message": f"{path} not in capture"}})
                return self._send(200, found, etag=found.get("@odata.etag"))
            queue = state.answers.get((self.command, canonical(path))) or []
            if queue:
                status, answer = queue.pop(0)
                return self._send(status, answer)
            self._send(204, None)

        def _send(self, status: int, body: dict | None, etag: str | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            if etag:
                self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _reply

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
