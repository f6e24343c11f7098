"""Celery tasks of the acceptance app: thin shells over plain functions."""

from __future__ import annotations

from celery import shared_task

from .rack_gate import OBSERVE_SHELVES_TASK, observe_shelves


@shared_task(name=OBSERVE_SHELVES_TASK)
def observe_rack_shelves(verdict_id: int) -> None:
    """Read a rack's power shelves from their BMCs for its rack-wide verdict (the site's worker)."""
    observe_shelves(verdict_id)
