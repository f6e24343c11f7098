"""Live updates: the payload shapes and the one class that sends to the channel layer."""

from __future__ import annotations

import logging
from typing import Any, TypedDict

from asgiref.sync import async_to_sync
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


def rack_group(rack_id: int) -> str:
    return f"rack-{rack_id}"


def site_group(site_id: int) -> str:
    return f"site-{site_id}"


def node_group(node_id: int) -> str:
    return f"node-{node_id}"


FLEET_GROUP = "fleet"


class LivePublisher:
    """The only sender of group messages. Consumers receive them as `live.event`."""

    def publish_event(self, payload: EventPayload, groups: list[str]) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        message = {"type": "live.event", "event": payload}
        for group in groups:
            try:
                async_to_sync(layer.group_send)(group, message)
            except Exception:  # noqa: BLE001
                # The database is the source of truth; a lost live message is recovered by the
                # browser's snapshot on reconnect, so a Redis hiccup must not fail the caller.
                logger.warning("live update to %s not sent", group, exc_info=True)


publisher = LivePublisher()
