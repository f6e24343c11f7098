"""LabHall: the simulated hall at runtime. All BMCs in one background thread and asyncio loop.

Usable from tests (`with LabHall(nodes=3) as hall: ...`) and from `manage.py lab serve`.
Each node's BMC listens on its own loopback address (127.0.1.N), over HTTP and HTTPS with its
own self-signed certificate, on ports the kernel picks, so parallel halls never collide.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from .bmc.app import BmcApp
from .bmc.certs import fingerprint, make_certificate, server_context
from .bmc.flavours import FLAVOURS
from .build import build_node
from .clock import LabClock
from .node import LabNode

TICK_SECONDS = 0.05
INVENTORY_VERSION = 1


def loopback_address(index: int) -> str:
    """The loopback address of node `index` (0-based): 127.0.1.1, 127.0.1.2, ..."""
    return f"127.0.{1 + index // 250}.{1 + index % 250}"


@dataclass
class LabBmc:
    """One running BMC: its node and where and how to reach it."""

    node: LabNode
    flavour: str
    http_url: str = ""
    https_url: str = ""
    cert_fingerprint: str = ""
    cert_pem: bytes = b""


class LabHall:
    """A hall of simulated nodes whose BMCs serve Redfish on loopback."""

    def __init__(
        self,
        nodes: int = 1,
        *,
        flavours: tuple[str, ...] | list[str] = ("dell", "hpe", "supermicro"),
        speed: float = 1.0,
        seed: int = 0,
        faults: dict[int, list[str]] | None = None,
        port: int = 0,
    ) -> None:
        unknown = [f for f in flavours if f not in FLAVOURS]
        if unknown or not flavours:
            raise ValueError(f"unknown flavours {unknown}; known: {', '.join(FLAVOURS)}")
        self.clock = LabClock(speed)
        self.seed = seed
        self.port = port
        self.nodes: list[LabNode] = []
        self.bmcs: list[LabBmc] = []
        for index in range(nodes):
            flavour = flavours[index % len(flavours)]
            node = build_node(index, flavour, seed, loopback_address(index))
            for spec in (faults or {}).get(index, []):
                node.faults.set(spec)
            self.nodes.append(node)
            self.bmcs.append(LabBmc(node=node, flavour=flavour))
        # A rack-scale hall's couplings across its members (lab.rack.LabRackFabric sets it).
        self.rack: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runners: list[web.AppRunner] = []
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> LabHall:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self, timeout: float | None = None) -> None:
        """Start every BMC; returns once all listen (by default within 30 s and 50 ms a node:
        a 5,000-node hall makes 10,000 TLS and plain listeners)."""
        self._thread = threading.Thread(target=self._run, name="lab-hall", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout or 30.0 + 0.05 * len(self.bmcs)):
            raise RuntimeError("the lab hall did not start in time")
        if self._error is not None:
            raise RuntimeError(f"the lab hall failed to start: {self._error}") from self._error

    def stop(self) -> None:
        """Stop every BMC and the loop thread."""
        loop = self._loop
        if loop is None or self._thread is None:
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        try:
            future.result(timeout=10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=10)
            self._loop = None

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._startup())
        except BaseException as exc:  # reported to start()'s caller
            self._error = exc
            self._ready.set()
            loop.close()
            return
        ticker = loop.create_task(self._ticker())
        self._ready.set()
        loop.run_forever()
        ticker.cancel()
        loop.run_until_complete(asyncio.gather(ticker, return_exceptions=True))
        loop.close()

    async def _startup(self) -> None:
        for bmc in self.bmcs:
            address = bmc.node.bmc_address
            cert_pem, key_pem = make_certificate(address, f"bmc-{bmc.node.serial}")
            bmc.cert_pem = cert_pem
            bmc.cert_fingerprint = fingerprint(cert_pem)
            app = BmcApp(bmc.node, FLAVOURS[bmc.flavour], self.clock).application()
            # A short shutdown: a BMC holding an answer (bmc_timeout) must not hold up stop().
            runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
            await runner.setup()
            self._runners.append(runner)
            http_port = await _serve(runner, address, self.port, None)
            https_port = await _serve(
                runner,
                address,
                self.port + 1 if self.port else 0,
                server_context(cert_pem, key_pem),
            )
            bmc.http_url = f"http://{address}:{http_port}"
            bmc.https_url = f"https://{address}:{https_port}"

    async def _shutdown(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()

    async def _ticker(self) -> None:
        # Effects come due even when nobody asks (a reboot the agent simulation waits for).
        while True:
            self.tick()
            await asyncio.sleep(TICK_SECONDS)

    # -- control ----------------------------------------------------------------------------

    def tick(self) -> None:
        """Apply every effect due at the current lab time, on every node."""
        now = self.clock.now()
        for node in self.nodes:
            node.tick(now)

    def advance(self, lab_seconds: float) -> None:
        """Move lab time forward and apply what came due (tests drive time with this)."""
        self.clock.advance(lab_seconds)
        self.tick()

    def bmc(self, key: int | str) -> LabBmc:
        """A BMC by node index or serial."""
        for index, bmc in enumerate(self.bmcs):
            if key == index or key == bmc.node.serial:
                return bmc
        raise KeyError(key)

    def bmc_of_flavour(self, flavour: str) -> LabBmc:
        """The first BMC of a vendor flavour (a mixed hall's "dell", a rack's "nvl_switch")."""
        for bmc in self.bmcs:
            if bmc.flavour == flavour:
                return bmc
        raise KeyError(flavour)

    def node(self, key: int | str) -> LabNode:
        """A node by index or serial."""
        return self.bmc(key).node

    def set_fault(self, key: int | str, spec: str) -> None:
        """Turn a fault on for one node ("name" or "name:param")."""
        self.node(key).faults.set(spec)

    def clear_fault(self, key: int | str, name: str | None = None) -> None:
        """Turn one fault (or all) off for one node."""
        self.node(key).faults.clear(name)

    # -- inventory --------------------------------------------------------------------------

    def inventory(self) -> dict[str, Any]:
        """What an operator would be handed for this hall: where each BMC is and how to log in."""
        return {
            "version": INVENTORY_VERSION,
            "seed": self.seed,
            "speed": self.clock.speed,
            "nodes": [
                {
                    "index": index,
                    "serial": bmc.node.serial,
                    "flavour": bmc.flavour,
                    "manufacturer": bmc.node.manufacturer,
                    "model": bmc.node.model,
                    "bmc_url": bmc.https_url,
                    "bmc_http_url": bmc.http_url,
                    "username": bmc.node.username,
                    "password": bmc.node.password,
                    "cert_fingerprint": bmc.cert_fingerprint,
                    "macs": bmc.node.macs,
                    "faults": dict(bmc.node.faults.active),
                }
                for index, bmc in enumerate(self.bmcs)
            ],
        }

    def write_inventory(self, path: str | os.PathLike[str]) -> Path:
        """Write the inventory JSON, readable by its owner only (it holds BMC passwords)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed into place: whoever waits for the file to appear (the lab
        # serve test, an enrolling script) never reads it half written (a clean-clone CI run did).
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(self.inventory(), handle, indent=2)
        os.replace(partial, target)
        return target


def read_inventory(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read an inventory written by LabHall.write_inventory."""
    return json.loads(Path(path).read_text())


async def _serve(runner: web.AppRunner, address: str, port: int, ssl_context) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, port))
    site = web.SockSite(runner, sock, ssl_context=ssl_context)
    await site.start()
    return sock.getsockname()[1]
