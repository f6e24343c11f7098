"""Outbound webhooks: a signed POST to every configured receiver on each node state change.

The body is JSON; `X-Greenlight-Signature: sha256=<hex>` is HMAC-SHA256 of the exact body bytes
keyed with settings.GREENLIGHT_WEBHOOK_SECRET, so a receiver recomputes it over what it read
before parsing. `X-Greenlight-Delivery` is the event id: a receiver that sees it twice (a retry
after a lost answer) can drop the duplicate.

fleet.lifecycle.transition() calls state_changed() inside its transaction; delivery is queued
only once that transaction commits, and each receiver gets its own Celery task, retried with
exponential backoff, so one slow or broken receiver delays no other and no transition.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import TYPE_CHECKING, Any

import httpx
from celery import shared_task
from django.conf import settings
from django.db import transaction

if TYPE_CHECKING:
    from .models import Event, Node

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Greenlight-Signature"
EVENT_NAME = "node.state_changed"
TIMEOUT_S = 10.0
BACKOFF_BASE_S = 5


class DeliveryFailed(Exception):
    """A receiver did not accept a delivery (network error or non-2xx answer)."""


def sign(body: bytes, secret: str) -> str:
    """The signature header's value for `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(body: bytes, secret: str, signature: str) -> bool:
    """Check a signature header in constant time (what a receiver does)."""
    return hmac.compare_digest(sign(body, secret), signature)


def state_change_payload(node: Node, event: Event) -> dict[str, Any]:
    """The webhook body: the node in brief and the move. No BMC credentials, by construction."""
    rack = node.rack if node.rack_id else None
    return {
        "event": EVENT_NAME,
        "id": event.pk,
        "created_at": event.created_at.isoformat(),
        "node": {
            "id": node.pk,
            "serial": node.serial,
            "hostname": node.hostname,
            "site": rack.site.name if rack else None,
            "rack": rack.name if rack else None,
            "position": node.position,
        },
        "from": event.data.get("from"),
        "to": event.data.get("to"),
        "reason": event.message,
        "actor": event.author(),
    }


def state_changed(node: Node, event: Event) -> None:
    """Queue a delivery of this state change to every receiver once the transaction commits."""
    urls = list(settings.GREENLIGHT_WEBHOOK_URLS)
    if not urls:
        return
    # The body is built now, inside the transaction, so it describes exactly this move even if
    # the node moves again before the worker runs.
    body = json.dumps(state_change_payload(node, event), separators=(",", ":"), sort_keys=True)
    event_id = event.pk

    def enqueue() -> None:
        for url in urls:
            try:
                deliver_webhook.delay(url, body, event_id)
            except Exception:  # noqa: BLE001
                # The state change is committed; a broker outage loses this notification but
                # must not turn a successful transition into an error for its caller.
                logger.warning(
                    "webhook for event %s to %s not queued", event_id, url, exc_info=True
                )

    # on_commit: a receiver must never hear of a move that a rollback then undid.
    transaction.on_commit(enqueue)


def deliver(url: str, body: str, event_id: int, *, secret: str | None = None) -> int:
    """POST one signed delivery; return the status code or raise DeliveryFailed."""
    secret = settings.GREENLIGHT_WEBHOOK_SECRET if secret is None else secret
    raw = body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Greenlight-Webhook/1",
        "X-Greenlight-Event": EVENT_NAME,
        "X-Greenlight-Delivery": str(event_id),
        SIGNATURE_HEADER: sign(raw, secret),
    }
    try:
        response = httpx.post(url, content=raw, headers=headers, timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise DeliveryFailed(f"{url}: {type(exc).__name__}: {exc}") from exc
    if not 200 <= response.status_code < 300:
        raise DeliveryFailed(f"{url}: HTTP {response.status_code}")
    return response.status_code


def backoff_s(retries: int) -> float:
    """Seconds before retry number `retries + 1`: 5, 10, 20, 40, then GREENLIGHT_MAX_COUNTDOWN_S.

    Capped at the longest countdown any task is sent with: a retry held longer than the broker's
    visibility timeout would be redelivered to a second worker, a second POST of the same event.
    """
    return min(BACKOFF_BASE_S * 2**retries, settings.GREENLIGHT_MAX_COUNTDOWN_S)


@shared_task(bind=True, ignore_result=True, acks_late=True)
def deliver_webhook(self, url: str, body: str, event_id: int) -> None:
    """Deliver one state-change webhook; retry with exponential backoff, then give up loudly."""
    try:
        deliver(url, body, event_id)
    except DeliveryFailed as exc:
        retries = self.request.retries
        if retries >= settings.GREENLIGHT_WEBHOOK_MAX_RETRIES:
            logger.error(
                "webhook for event %s dropped after %d tries: %s", event_id, retries + 1, exc
            )
            return
        logger.warning("webhook for event %s failed (try %d): %s", event_id, retries + 1, exc)
        raise self.retry(exc=exc, countdown=backoff_s(retries)) from None
