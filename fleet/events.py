"""Recording events: the audit log, the live feed and the node timeline all read these rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction

from .choices import EventKind
from .live import FLEET_GROUP, EventPayload, node_group, publisher, rack_group, site_group
from .models import Event

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from .models import Node, Rack


# The longest message an event keeps: messages quote what BMCs, agents and uploads said, and no
# outside text may grow the audit log (or every live viewer's feed) without bound.
MAX_MESSAGE = 2000


def truncate(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with a note of how long it was."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def event_payload(event: Event, node: Node | None) -> EventPayload:
    """The wire shape of an event, for browsers and WebSocket clients."""
    return {
        "seq": event.pk,
        "kind": event.kind,
        "node": (
            {
                "id": node.pk,
                "serial": node.serial,
                "state": node.state,
                "rack_id": node.rack_id,
                "position": node.position,
            }
            if node is not None
            else None
        ),
        "message": event.message,
        "data": event.data,
        "actor": event.author(),
        "created_at": event.created_at.isoformat(),
    }


def record(
    node: Node | None,
    kind: str,
    *,
    actor: AbstractBaseUser | None = None,
    actor_label: str = "",
    message: str = "",
    data: dict[str, Any] | None = None,
    publish: bool = True,
    rack: Rack | None = None,
) -> Event:
    """Append an event and publish it to live viewers once the surrounding transaction commits.

    An event of a whole rack (a rack-scale system's lifecycle, its rack run) has no node and
    names its `rack`; a node's event is its rack's too.
    """
    rack_id = node.rack_id if node is not None else (rack.pk if rack is not None else None)
    event = Event.objects.create(
        node=node,
        rack_id=rack_id,
        kind=kind,
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_label=actor_label,
        message=truncate(message, MAX_MESSAGE),
        data=data or {},
    )
    if publish:
        payload = event_payload(event, node)
        groups = [FLEET_GROUP]
        if node is not None:
            groups.append(node_group(node.pk))
            if node.rack_id is not None:
                groups.append(rack_group(node.rack_id))
                site_id = node.rack.site_id if node.rack_id else None
                if site_id:
                    groups.append(site_group(site_id))
        elif rack is not None:
            groups += [rack_group(rack.pk), site_group(rack.site_id)]
        # on_commit: a browser must never see an event whose row a rollback then removed.
        transaction.on_commit(lambda: publisher.publish_event(payload, groups))
    return event


def record_plain_http_mark(
    node: Node, *, actor: AbstractBaseUser | None = None, actor_label: str = ""
) -> Event:
    """Record that a node's BMC was marked plain HTTP (with its reason), or the mark withdrawn."""
    reason = node.bmc_plain_http_reason.strip()
    message = (
        f"BMC marked plain HTTP (its password crosses the network unencrypted): {reason}"
        if reason
        else "BMC plain-HTTP mark withdrawn: https only"
    )
    return record(
        node,
        EventKind.UPDATED,
        actor=actor,
        actor_label=actor_label,
        message=message,
        data={"bmc_plain_http": bool(reason), "reason": reason},
    )
