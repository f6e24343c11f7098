"""A started worker or web server freezes its start-up objects out of the garbage collector and
collects its young generation less often (common/gc_tuning.py says why)."""

from __future__ import annotations

import gc

import pytest

from common.gc_tuning import settle_long_lived_objects
from greenlight.celery import settle_worker_memory
from tests.support.processes import run_python


@pytest.fixture
def restored_collector():
    """Leave the test process's collector as it found it."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_settling_freezes_what_exists_and_sets_the_young_threshold(restored_collector):
    _, middle, old = gc.get_threshold()
    made_before = {"a container": []}
    assert any(tracked is made_before for tracked in gc.get_objects())

    settle_long_lived_objects(4321)

    # Frozen: no collection walks it any more.
    assert not any(tracked is made_before for tracked in gc.get_objects())
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (4321, middle, old)


def test_a_ready_worker_settles_with_the_configured_threshold(settings, restored_collector):
    settings.GREENLIGHT_GC_YOUNG_THRESHOLD = 2345
    # Connected to worker_ready; sent here by hand, as a worker would once its consumer runs.
    settle_worker_memory()
    assert gc.get_threshold()[0] == 2345
    assert gc.get_freeze_count() > 0


@pytest.mark.parametrize(
    "entry_point", ["greenlight.wsgi", "greenlight.node_wsgi", "greenlight.asgi"]
)
def test_each_web_entry_point_settles_once_its_application_is_built(entry_point):
    """Imported as a server imports it, in a process of its own."""
    probe = f"import gc, {entry_point}; print(gc.get_threshold()[0], gc.get_freeze_count())"
    result = run_python(probe, GREENLIGHT_GC_YOUNG_THRESHOLD="3456")
    assert result.returncode == 0, result.stderr
    threshold, frozen = map(int, result.stdout.split())
    assert threshold == 3456
    # Django's and the app's start-up objects: well over a hundred thousand of them.
    assert frozen > 50_000
