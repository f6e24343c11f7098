"""Celery tasks of the fleet app: thin shells over the lifecycle, fleet.webhooks and fleet.dcim."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from . import webhooks
from .lifecycle import transition
from .models import Node

logger = logging.getLogger(__name__)


@shared_task(bind=True, ignore_result=True, acks_late=True)
def deliver_webhook(self, url: str, body: str, event_id: int) -> None:
    """Deliver one state-change webhook; retry with exponential backoff, then give up loudly."""
    try:
        webhooks.deliver(url, body, event_id)
    except webhooks.DeliveryFailed as exc:
        retries = self.request.retries
        if retries >= settings.GREENLIGHT_WEBHOOK_MAX_RETRIES:
            logger.error(
                "webhook for event %s dropped after %d tries: %s", event_id, retries + 1, exc
            )
            return
        logger.warning("webhook for event %s failed (try %d): %s", event_id, retries + 1, exc)
        raise self.retry(exc=exc, countdown=webhooks.backoff_s(retries)) from None


@shared_task(ignore_result=True)
def netbox_sync() -> None:
    """Push the inventory to the NetBox named in settings (scheduled only when it is set)."""
    from .dcim.netbox import NetBoxClient, sync

    if not (settings.GREENLIGHT_NETBOX_URL and settings.GREENLIGHT_NETBOX_TOKEN):
        return
    with NetBoxClient(settings.GREENLIGHT_NETBOX_URL, settings.GREENLIGHT_NETBOX_TOKEN) as client:
        report = sync(client)
    for line in report.error_lines():
        logger.error("netbox sync: %s", line)
    logger.info("netbox sync: %s", report.summary())


@shared_task
def transition_node(
    node_id: int, to_state: str, reason: str = "", actor_label: str = "worker"
) -> int:
    """Move a node through the lifecycle table; return the id of the event written."""
    node = Node.objects.select_related("rack").get(pk=node_id)
    return transition(node, to_state, actor_label=actor_label, reason=reason).event_id
