"""Open BMC sessions kept between steps, one pool per process.

A step that opens a fresh client pays a TLS handshake, a read of the service root, a login and a
logout, four exchanges for what is often one GET. Across a deployment that is most of the
orchestration's CPU and most of the BMCs' session churn (BMCs have few session slots). The pool
lends a step an open client for its BMC and takes it back afterwards; a client that saw its
connection fail is closed instead, one idle past `idle_s` (GREENLIGHT_BMC_SESSION_IDLE_S) is
logged out, and one idle past httpx's keep-alive keeps its session but not its connection.

How long to keep one: a BMC closes a session idle past its own SessionService.SessionTimeout
(Lenovo XCC's default is 300 s, iDRAC's web server's 1,800 s), so a pool that keeps sessions for
much less than that pays for opening them again: a node's steps in its in-band phases and under
a busy queue come minutes apart. In the benchmark (150 nodes at speed 20, the pool's time scaled
with the clock) the workers opened 10.5 sessions a node and logged 10.4 out idle with a minute,
2.8 and 1.3 with four. A session the BMC closed sooner than the pool thought costs one 401 and a
login on its next request (transport.py), cheaper than a new client, and its logout nothing.
The gap grows with the fleet: at 5,000 nodes a node's next step came about 250 s after its last
and, with two workers, on the same one half the time; at four minutes the workers opened and
logged out a session for two of every three looks (session 32), so the default keeps them for
30 minutes, iDRAC's and OpenBMC's own timeout.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from common import instrumentation

from .client import RedfishClient

PoolKey = tuple[str, str, str, str]

# Real seconds an idle client keeps its connection: httpx's own keep-alive expiry, past which it
# would not reuse the connection anyway. Past it the pool closes the connection and keeps the
# session: 5,000 BMCs' idle connections held open per worker ran the lab out of file
# descriptors (20,000) within ten minutes of a benchmark (session 32), and a real BMC's web
# server has few connection slots too.
KEEPALIVE_S = 5.0


def pool_key(base_url: str, username: str, password: str, fingerprint: str | None) -> PoolKey:
    """Clients are shared only between callers with the same address, credentials and pin."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    return (base_url.rstrip("/"), username, digest, fingerprint or "")


class SessionPool:
    """Idle open clients by BMC; `lend` hands one out exclusively for the length of a block."""

    def __init__(
        self,
        *,
        idle_s: float,
        per_bmc: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle_s = idle_s
        self.per_bmc = per_bmc
        self._clock = clock
        self._idle: dict[PoolKey, list[tuple[float, RedfishClient]]] = {}
        self._lock = threading.Lock()
        self._next_expiry = 0.0
        self.opened = 0
        self.reused = 0

    @contextmanager
    def lend(self, key: PoolKey, factory: Callable[[], RedfishClient]) -> Iterator[RedfishClient]:
        """An open client for the key's BMC; returned to the pool after the block if healthy."""
        client = self._take(key)
        # The benchmark counts both. A miss costs the open counted here (the service root, a
        # login) and, later in the look, reading again what a client caches (systems, managers,
        # the parts firmware entries link to).
        if client is None:
            with instrumentation.work("bmc_session:opened"):
                client = factory()
                client.open()
            self.opened += 1
        else:
            with instrumentation.work("bmc_session:reused"):
                self.reused += 1
        try:
            yield client
        finally:
            self._give_back(key, client)

    def _take(self, key: PoolKey) -> RedfishClient | None:
        now = self._clock()
        stale: list[RedfishClient] = []
        found = None
        with self._lock:
            idle = self._idle.get(key, [])
            while idle:
                since, client = idle.pop()
                if now - since <= self.idle_s:
                    found = client
                    break
                stale.append(client)
            if now >= self._next_expiry:
                # Idle sessions of BMCs nobody asks for any more are logged out here, and the
                # connections of the others closed, at most once a second: a scan over every
                # BMC per step would cost more than it saves.
                self._next_expiry = now + 1.0
                # Under the lock: a client taken meanwhile would lose its connection mid-request.
                # Closing a socket sends nothing, so the lock is held for no network exchange.
                stale.extend(self._scan_locked(now))
        for client in stale:
            with instrumentation.work("bmc_session:expired"):
                client.close()
        return found

    def _give_back(self, key: PoolKey, client: RedfishClient) -> None:
        if client.transport.broken:
            with instrumentation.work("bmc_session:dropped"):
                client.transport.drop()
            return
        extra = None
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.per_bmc:
                idle.append((self._clock(), client))
            else:
                extra = client
        if extra is not None:
            with instrumentation.work("bmc_session:surplus"):
                extra.close()

    def _scan_locked(self, now: float) -> list[RedfishClient]:
        """Take out the clients idle past idle_s (for the caller to log out) and close the
        connections of the ones idle past KEEPALIVE_S, in one pass (2.7 ms at 5,000 BMCs, once a
        second) that rebuilds only the BMCs that lost a client."""
        expired: list[RedfishClient] = []
        for key, idle in list(self._idle.items()):
            if not idle or any(now - since > self.idle_s for since, _ in idle):
                expired += [client for since, client in idle if now - since > self.idle_s]
                idle = [(since, client) for since, client in idle if now - since <= self.idle_s]
                if not idle:
                    del self._idle[key]
                    continue
                self._idle[key] = idle
            for since, client in idle:
                if now - since > KEEPALIVE_S and client.transport.holds_connections:
                    client.transport.release_connections()
        return expired

    def close_all(self) -> None:
        """Log every idle session out (a worker shutting down leaves no session behind)."""
        with self._lock:
            clients = [c for idle in self._idle.values() for _, c in idle]
            self._idle.clear()
        for client in clients:
            client.close()

    def idle_count(self) -> int:
        with self._lock:
            return sum(len(idle) for idle in self._idle.values())
