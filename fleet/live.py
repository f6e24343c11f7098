"""Live updates: the payload shapes and the one class that sends to the channel layer."""

from __future__ import annotations

import asyncio
import atexit
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
    """The only sender of group messages. Consumers receive them as `live.events`.

    `publish_event` queues and returns: the publisher's own thread, with one event loop kept
    running (the channel layer keeps its Redis connections per loop), sends what is queued. What
    queues while a send is under way goes out together next, one message per group: a rack start
    commits 741 runs' events at once, and sent one by one they reached browsers up to 25 s late.
    """

    # Long enough for a busy Redis, short enough that a dead one cannot hold the queue for long.
    SEND_TIMEOUT_S = 5.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._outbox: list[tuple[EventPayload, list[str]]] = []
        self._idle = threading.Event()
        self._idle.set()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        # Called with self._lock held.
        alive = self._thread is not None and self._thread.is_alive()
        if self._loop is None or not alive or self._pid != os.getpid():
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="live-publisher", daemon=True
            )
            self._thread.start()
            self._pid = os.getpid()
            self._idle.set()  # a sender that was running in the parent is not running here
        return self._loop

    def publish_event(self, payload: EventPayload, groups: list[str]) -> None:
        """Queue an event for its groups; it is sent without the caller waiting."""
        if get_channel_layer() is None:
            return
        with self._lock:
            self._outbox.append((payload, groups))
            loop = self._event_loop()
            if not self._idle.is_set():
                return  # the running sender takes this one on its next round
            self._idle.clear()
        asyncio.run_coroutine_threadsafe(self._send_queued(), loop)

    def flush(self, timeout: float = SEND_TIMEOUT_S) -> bool:
        """Wait until everything queued so far is sent (or failed); False on timeout."""
        return self._idle.wait(timeout)

    async def _send_queued(self) -> None:
        while True:
            with self._lock:
                queued, self._outbox = self._outbox, []
                if not queued:
                    self._idle.set()
                    return
            try:
                await asyncio.wait_for(self._send(queued), self.SEND_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 (the sender must outlive any failure)
                # The database is the source of truth; a lost live message is recovered by the
                # browser's snapshot on reconnect, so a Redis hiccup must not stop the sender.
                logger.warning("%d live update(s) not sent: %r", len(queued), exc)

    async def _send(self, queued: list[tuple[EventPayload, list[str]]]) -> None:
        layer = get_channel_layer()
        by_group: dict[str, list[EventPayload]] = {}
        for payload, groups in queued:
            for group in groups:
                by_group.setdefault(group, []).append(payload)
        messages = {g: {"type": "live.events", "events": e} for g, e in by_group.items()}
        if hasattr(layer, "group_send_many"):  # ours (fleet/channel_layer.py): two round trips
            await layer.group_send_many(messages)
            return
        results = await asyncio.gather(
            *(layer.group_send(group, message) for group, message in messages.items()),
            return_exceptions=True,
        )
        for group, result in zip(messages, results, strict=True):
            if isinstance(result, Exception):
                logger.warning("live update to %s not sent: %r", group, result)


publisher = LivePublisher()
# A command that records events and exits (a lab run, a management command) sends them first.
atexit.register(publisher.flush)
