"""The proxy in front of several node planes, as an installation's load balancer is.

The README's three-machine install runs a web process per control machine behind a proxy: when
one dies, the proxy sends the agents to the other and they retry their reports. The lab's proxy
is that, and no more: each new TCP connection goes to the next backend that accepts one. A
connection to a backend that dies is cut, as a load balancer's would be.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading


class TcpProxy:
    """Round-robin TCP forwarding from one loopback port to `backends` ((host, port) pairs)."""

    def __init__(self, backends: list[tuple[str, int]]) -> None:
        self.backends = list(backends)
        self._next = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.connections: dict[tuple[str, int], int] = {b: 0 for b in self.backends}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Serve in a thread of its own; returns once it listens."""
        self._thread = threading.Thread(target=self._run, name="lab-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the lab proxy did not start")

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop = None

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        server = loop.run_until_complete(asyncio.start_server(self._serve, sock=self._sock))
        self._ready.set()
        loop.run_forever()
        server.close()
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        # Each backend once, from the one after the last used: a dead one refuses at once.
        for _ in range(len(self.backends)):
            backend = self.backends[self._next % len(self.backends)]
            self._next += 1
            try:
                streams = await asyncio.wait_for(asyncio.open_connection(*backend), 5)
            except (OSError, TimeoutError):
                continue
            self.connections[backend] += 1
            return streams
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream = await self._connect()
        if upstream is None:
            writer.close()
            return
        up_reader, up_writer = upstream
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until either side closes; then close the other, so neither end waits forever."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()
