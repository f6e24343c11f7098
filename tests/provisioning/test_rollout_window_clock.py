"""The wall clock maintenance windows are read against (issue 36): the real one unless lab mode
steers it, and a window that shuts mid-rollout lets the nodes it let in finish, starts no other,
and the first advance after the next window opens (the sweep's) goes on."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core import checks
from django.utils import timezone

from fleet.choices import NodeState
from fleet.models import MaintenanceWindow, Site
from lab.wall_clock import LabWallClock
from provisioning import clock
from provisioning.choices import RolloutNodeStatus, RolloutState
from provisioning.day2.rollouts import advance_open_rollouts, start_rollout
from provisioning.day2.waves import WavePolicy
from provisioning.models import Rollout
from tests import factories

from .test_rollouts import provisioned, statuses, succeed

W, RUNNING, DONE = RolloutNodeStatus.WAITING, RolloutNodeStatus.RUNNING, RolloutNodeStatus.DONE
BERLIN = ZoneInfo("Europe/Berlin")
# Monday 23 November 2026, Berlin time; the window is 01:00 to 03:00 every day.
BEFORE_IT_SHUTS = datetime(2026, 11, 23, 2, 50, tzinfo=BERLIN)
AFTER_IT_SHUT = datetime(2026, 11, 23, 3, 10, tzinfo=BERLIN)
NEXT_ONE = datetime(2026, 11, 24, 1, 5, tzinfo=BERLIN)


@pytest.fixture
def wall(tmp_path, settings) -> LabWallClock:
    settings.GREENLIGHT_WALL_CLOCK_FILE = str(tmp_path / "wall-clock.json")
    return LabWallClock(tmp_path / "wall-clock.json")


def test_the_wall_clock_is_the_real_one_unless_the_lab_sets_it(wall, settings):
    assert abs(clock.wall_now() - timezone.now()) < timedelta(seconds=5)  # not written yet
    wall.set(NEXT_ONE)
    assert clock.wall_now() == NEXT_ONE  # it stands still
    wall.set(NEXT_ONE, speed=3600.0)
    assert NEXT_ONE < clock.wall_now() < NEXT_ONE + timedelta(hours=1)
    settings.GREENLIGHT_LAB_MODE = False  # production: the real clock, whatever a file says
    assert abs(clock.wall_now() - timezone.now()) < timedelta(seconds=5)


def test_an_unreadable_wall_clock_is_refused_not_replaced_by_the_real_one(wall):
    wall.path.write_text('{"reads": "2026-11-23T02:50:00"}')
    with pytest.raises(ValueError, match="wall-clock.json cannot be read"):
        clock.wall_now()


def test_a_wall_clock_file_outside_lab_mode_fails_the_check(settings):
    settings.GREENLIGHT_WALL_CLOCK_FILE = "/tmp/wall-clock.json"
    settings.GREENLIGHT_LAB_MODE = False
    ids = [message.id for message in checks.run_checks()]
    assert "greenlight.E009" in ids
    settings.GREENLIGHT_LAB_MODE = True
    assert "greenlight.E009" not in [message.id for message in checks.run_checks()]


@pytest.mark.django_db
def test_a_window_shutting_mid_rollout_lets_its_nodes_finish_and_starts_none_till_the_next(
    wall, manifest, profile, bob
):
    site = Site.objects.create(name="berlin", time_zone="Europe/Berlin")
    rack = factories.make_rack("B01", site=site)
    MaintenanceWindow.objects.create(site=site, days="daily", start=time(1), end=time(3))
    nodes = [provisioned(NodeState.FAILED, manifest, rack=rack, position=i) for i in (1, 2, 3)]
    new = manifest.clone_as_draft()
    new.publish()
    wall.set(BEFORE_IT_SHUTS)
    policy = WavePolicy(canary=1, wave_growth=2)
    # No `now`: every advance reads the wall clock, as the workers and the sweep do.
    rollout = start_rollout(new, actor=bob, concurrency=3, policy=policy)
    assert statuses(rollout) == [RUNNING, W, W]

    wall.set(AFTER_IT_SHUT)  # while the canary runs
    canary = rollout.entries.get(wave=0)
    succeed(canary.run)
    assert advance_open_rollouts() == 1
    # The canary, started inside the window, finished; the next wave starts nowhere, saying why.
    assert statuses(rollout) == [DONE, W, W]
    opens = "waiting for berlin's maintenance window (opens Tue 01:00 Europe/Berlin)"
    assert {e.reason for e in rollout.entries.filter(wave=1)} == {opens}

    wall.set(NEXT_ONE)
    advance_open_rollouts()  # the sweep's next pass
    assert statuses(rollout) == [DONE, RUNNING, RUNNING]
    assert Rollout.objects.get(pk=rollout.pk).state == RolloutState.RUNNING
    assert [e.node_id for e in rollout.entries.order_by("order")] == [n.pk for n in nodes]
