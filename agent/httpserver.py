"""A minimal HTTP/1.1 JSON server on asyncio streams: the agent's API, with no dependency.

It handles what the agent needs (small JSON requests, keep-alive) and nothing more.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

MAX_BODY = 1 << 20


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""

    def json(self):
        return json.loads(self.body or b"{}")


@dataclass
class Response:
    status: int
    body: dict | list | None = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response]]
REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden"}
REASONS |= {404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large"}
REASONS |= {500: "Internal Server Error"}


class JsonHttpServer:
    """Serves one handler on host:port (0 picks a free port)."""

    def __init__(self, handler: Handler, host: str, port: int = 0) -> None:
        self.handler = handler
        self.host = host
        self.port = port
        self._server: asyncio.base_events.Server | None = None
        self._connections: dict[asyncio.Task, asyncio.StreamWriter] = {}

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._client, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            # Open keep-alive connections (Greenlight reuses them) would hold wait_closed()
            # forever on 3.11 and leave tasks behind: end them, as a reboot would.
            # Closing the socket ends the task's read quietly; cancelling it would make
            # asyncio's stream callback log the CancelledError as an error.
            others = {t: w for t, w in self._connections.items() if t is not asyncio.current_task()}
            for writer in others.values():
                writer.transport.abort()
            if others:
                await asyncio.wait(others, timeout=5)
            self._server = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections[task] = writer
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                try:
                    response = await self.handler(request)
                except Exception as exc:  # noqa: BLE001
                    response = Response(500, {"error": f"{type(exc).__name__}: {exc}"})
                await _write_response(writer, response)
                if request.headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self._connections.pop(task, None)
            writer.close()


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    line = await reader.readline()
    if not line:
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length") or 0)
    if length > MAX_BODY:
        raise ValueError("body too large")
    body = await reader.readexactly(length) if length else b""
    return Request(method.upper(), path, headers, body)


async def _write_response(writer: asyncio.StreamWriter, response: Response) -> None:
    payload = b"" if response.body is None else json.dumps(response.body).encode()
    head = [f"HTTP/1.1 {response.status} {REASONS.get(response.status, 'Status')}"]
    head += [f"{k}: {v}" for k, v in response.headers.items()]
    head += ["Content-Type: application/json", f"Content-Length: {len(payload)}", "", ""]
    writer.write("\r\n".join(head).encode("latin-1") + payload)
    await writer.drain()
