"""Live updates: the payload shapes and the one class that sends to the channel layer."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any, Literal, TypedDict

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


class NodeSummary(TypedDict):
    id: int
    serial: str
    state: str
    rack_id: int | None
    position: int | None


class EventPayload(TypedDict):
    seq: int
    kind: str
    node: NodeSummary | None
    message: str
    data: dict[str, Any]
    actor: str
    created_at: str


class NodeChange(TypedDict):
    """The latest thing that happened to one node within a coalescing window."""

    seq: int
    state: str
    rack_id: int | None
    kind: str


class LiveBatch(TypedDict):
    """What a browser receives: every node that changed since the last batch, and the newest seq.

    The browser fetches the changed nodes' fragments from the snapshot endpoint; `seq` is the id
    of the newest event folded in, which the browser passes back as `since` after a reconnect.
    """

    type: Literal["batch"]
    seq: int
    nodes: dict[str, NodeChange]
    events: int


class Coalescer:
    """Folds events into one batch per window: the latest change per node, the newest seq.

    A 740-node site in full bring-up produces hundreds of events a second; a browser needs at
    most one message per window naming the nodes to redraw, not every event.
    """

    def __init__(self) -> None:
        self.nodes: dict[str, NodeChange] = {}
        self.seq = 0
        self.count = 0

    def add(self, event: EventPayload) -> None:
        self.count += 1
        self.seq = max(self.seq, event["seq"])
        node = event["node"]
        if node is None:
            return
        key = str(node["id"])
        known = self.nodes.get(key)
        if known is None or known["seq"] < event["seq"]:
            self.nodes[key] = {
                "seq": event["seq"],
                "state": node["state"],
                "rack_id": node["rack_id"],
                "kind": event["kind"],
            }

    def take(self) -> LiveBatch | None:
        """The batch so far, emptying the buffer; None when nothing arrived."""
        if not self.count:
            return None
        batch: LiveBatch = {
            "type": "batch",
            "seq": self.seq,
            "nodes": self.nodes,
            "events": self.count,
        }
        self.nodes, self.count = {}, 0
        return batch


def rack_group(rack_id: int) -> str:
    return f"rack-{rack_id}"


def site_group(site_id: int) -> str:
    return f"site-{site_id}"


def node_group(node_id: int) -> str:
    return f"node-{node_id}"


FLEET_GROUP = "fleet"


class LivePublisher:
    """The only sender of group messages. Consumers receive them as `live.event`.

    Sends go through one event loop per process, kept running in a thread of its own: the
    channel layer keeps its Redis connections per loop, so a fresh loop per event (what
    async_to_sync does from a worker thread) paid a new connection for every event.
    """

    # Long enough for a busy Redis, short enough that a dead one cannot stall a worker's step.
    SEND_TIMEOUT_S = 5.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            alive = self._thread is not None and self._thread.is_alive()
            if self._loop is None or not alive or self._pid != os.getpid():
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="live-publisher", daemon=True
                )
                self._thread.start()
                self._pid = os.getpid()
            return self._loop

    def publish_event(self, payload: EventPayload, groups: list[str]) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        message = {"type": "live.event", "event": payload}

        async def send_all() -> None:
            results = await asyncio.gather(
                *(layer.group_send(group, message) for group in groups), return_exceptions=True
            )
            for group, result in zip(groups, results, strict=True):
                if isinstance(result, Exception):
                    # The database is the source of truth; a lost live message is recovered by
                    # the browser's snapshot on reconnect, so a Redis hiccup must not fail the
                    # caller.
                    logger.warning("live update to %s not sent: %s", group, result)

        future = asyncio.run_coroutine_threadsafe(send_all(), self._event_loop())
        try:
            future.result(timeout=self.SEND_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            logger.warning("live update not sent within %ss: Redis is slow", self.SEND_TIMEOUT_S)


publisher = LivePublisher()
