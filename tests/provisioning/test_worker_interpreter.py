"""A worker's interpreter settings, applied when the worker starts."""

from __future__ import annotations

import sys

import pytest

from greenlight.celery import shorten_interpreter_turns


def test_a_starting_worker_shortens_the_interpreter_lock_turns(settings):
    before = sys.getswitchinterval()
    settings.GREENLIGHT_WORKER_SWITCH_INTERVAL_MS = 2.0
    try:
        # Connected to worker_init; sent here by hand, Celery's Django fix-up would want a worker.
        shorten_interpreter_turns()
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(before)
