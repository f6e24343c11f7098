"""Celery tasks of the console: the scheduled push of the inventory to DCIM."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from .dcim.client import NetBoxClient
from .dcim.netbox import sync

logger = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def netbox_sync() -> None:
    """Push the inventory to the NetBox named in settings (scheduled only when it is set)."""
    if not (settings.GREENLIGHT_NETBOX_URL and settings.GREENLIGHT_NETBOX_TOKEN):
        return
    with NetBoxClient(settings.GREENLIGHT_NETBOX_URL, settings.GREENLIGHT_NETBOX_TOKEN) as client:
        report = sync(client)
    for line in report.error_lines():
        logger.error("netbox sync: %s", line)
    logger.info("netbox sync: %s", report.summary())
