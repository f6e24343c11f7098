"""A worker's interpreter settings, applied when the worker starts."""

from __future__ import annotations

import sys

import pytest
from celery.signals import worker_init

import greenlight.celery  # noqa: F401 (connects the app's signal handlers)


def test_a_starting_worker_shortens_the_interpreter_lock_turns(settings):
    before = sys.getswitchinterval()
    settings.GREENLIGHT_WORKER_SWITCH_INTERVAL_MS = 2.0
    try:
        worker_init.send(sender=None)
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(before)
