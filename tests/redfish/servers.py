"""Small HTTP servers for Redfish tests: canned answers, and a mockup folder server."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

# (status, content type, body) for a path
Answer = tuple[int, str, bytes]


def canonical(path: str) -> str:
    """Lower-case, no trailing slash, percent-decoded: how iLO-style links must be matched."""
    return unquote(path.split("?")[0]).lower().rstrip("/") or "/"


@contextmanager
def serve(answer: Callable[[str, str], Answer]) -> Iterator[str]:
    """Serve answer(method, path) on 127.0.0.1 at a free port; yield the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            status, ctype, body = answer(self.command, self.path)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PATCH = do_DELETE = _reply

        def log_message(self, *args) -> None:  # keep test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def json_answer(body: dict, status: int = 200) -> Answer:
    return status, "application/json", json.dumps(body).encode()


def mockup_answers(folder: Path) -> Callable[[str, str], Answer]:
    """Answers from a DMTF-layout mockup folder: <folder>/<path>/index.json is GET /redfish/v1/<path>.

    Paths match case-insensitively and without a trailing slash (the HPE capture links that way).
    """
    index: dict[str, Path] = {}
    for file in folder.rglob("index.json"):
        relative = file.parent.relative_to(folder).as_posix()
        key = "/redfish/v1" + ("" if relative == "." else "/" + relative)
        index[canonical(key)] = file

    def answer(method: str, path: str) -> Answer:
        if method != "GET":
            return json_answer({"error": {"message": "read-only mockup"}}, 405)
        file = index.get(canonical(path))
        if file is None:
            return json_answer({"error": {"message": f"{path} not in mockup"}}, 404)
        return 200, "application/json", file.read_bytes()

    return answer
