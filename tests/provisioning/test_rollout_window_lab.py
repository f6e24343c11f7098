"""A rollout on a real lab rack through a maintenance window that shuts mid-rollout (issue 36's
acceptance): the canary, started inside the window, finishes after it shut; the next wave waits,
its rows naming the next opening, sweep after sweep; the wall clock moves into the next window
and the sweep starts it; there a seeded bad BMC image trips the failure threshold, the rollout
ends paused with the report naming the node and bmc_firmware, and "roll back" returns the node
to the previous manifest's version.

Every Greenlight process reads windows against the lab's wall clock (lab/wall_clock.py), which
only this test moves: the window shuts and opens when the test says, whatever the CPU load.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, time
from zoneinfo import ZoneInfo

import pytest
import yaml

from console.firmware import firmware_rows
from fleet.choices import ComponentKind
from fleet.models import Component, MaintenanceWindow, Manifest, Node, Site
from fleet.roles import SITE_TECH
from lab.run import LabRun, LabRunConfig
from lab.wall_clock import LabWallClock
from provisioning.choices import RolloutNodeStatus, RolloutState, RunStatus
from provisioning.day2.rollout_report import report, roll_back
from provisioning.day2.rollouts import start_rollout
from provisioning.day2.waves import WavePolicy
from provisioning.models import Rollout
from tests import factories
from tests.support.own_queue import own_queue
from tests.support.slurm import until

from .test_rollout_lab import NEW_BMC, _publish_new_bmc

W, RUNNING, DONE, FAILED = (
    RolloutNodeStatus.WAITING,
    RolloutNodeStatus.RUNNING,
    RolloutNodeStatus.DONE,
    RolloutNodeStatus.FAILED,
)
BERLIN = ZoneInfo("Europe/Berlin")
# The lab site's window: 01:00 to 03:00 Berlin time, every day.
BEFORE_IT_SHUTS = datetime(2026, 11, 23, 2, 50, tzinfo=BERLIN)  # a Monday
AFTER_IT_SHUT = datetime(2026, 11, 23, 3, 10, tzinfo=BERLIN)
NEXT_ONE = datetime(2026, 11, 24, 1, 5, tzinfo=BERLIN)
OPENS = "waiting for lab's maintenance window (opens Tue 01:00 Europe/Berlin)"


def _rollout(pk: int) -> Rollout:
    return Rollout.objects.get(pk=pk)


def _entries(rollout: Rollout) -> str:
    """Each entry's wave, status and reason, and its run's status, phase and error."""
    return "entries: " + repr(
        [
            (e.wave, e.node.serial, e.status, e.reason)
            + ((e.run.status, e.run.current_phase, e.run.last_error[:200]) if e.run else ())
            for e in rollout.entries.select_related("node", "run").order_by("order")
        ]
    )


def _swept_twice(rollout: Rollout) -> None:
    """Wait until the rollout has been advanced twice more (the beat's sweep, every 2 s)."""
    for _ in range(2):
        seen = _rollout(rollout.pk).advanced_at
        until(
            lambda seen=seen: _rollout(rollout.pk).advanced_at > seen, "a sweep to advance it", 60
        )


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_window_shuts_mid_rollout_then_a_bad_image_trips_a_later_wave(tmp_path, settings):
    wall = LabWallClock(tmp_path / "wall-clock.json")
    settings.GREENLIGHT_WALL_CLOCK_FILE = str(wall.path)  # this process reads it too
    config = LabRunConfig(
        nodes=3,
        faults="none",
        flavour="dell",
        speed=400,
        soak_hours=0.25,
        timeout_s=300,
        extra_env=wall.env,
    )
    with own_queue(settings), LabRun(config, log_dir=tmp_path) as lab:
        first = lab.run_pass()
        assert first["finished"], first
        site = Site.objects.get(name=config.site)
        Site.objects.filter(pk=site.pk).update(time_zone="Europe/Berlin")
        MaintenanceWindow.objects.create(site=site, days="daily", start=time(1), end=time(3))
        any_node = Node.objects.get(pk=lab.nodes[0].pk)
        before = Manifest.objects.get(pk=any_node.manifest_id)
        old_bmc = yaml.safe_load(before.yaml_text)["firmware"]["bmc"]["version"]
        new = _publish_new_bmc(before)
        tech = factories.make_user("tess", SITE_TECH)

        # The rollout starts at 02:50, inside the window; from then on every process reads
        # 03:10, so the window shut while the canary ran (deterministically, whatever its pace).
        wall.set(AFTER_IT_SHUT)
        rollout = start_rollout(
            new,
            actor=tech,
            concurrency=3,
            policy=WavePolicy(canary=1, wave_growth=2, failure_threshold_pct=0),
            now=BEFORE_IT_SHUTS,
        )
        canary = rollout.entries.get(wave=0)
        second = list(rollout.entries.filter(wave=1).select_related("node").order_by("order"))
        assert canary.status == RUNNING and [e.status for e in second] == [W, W]
        bad = second[1].node
        lab.hall.set_fault(bad.serial, "firmware_update_fails:bmc")  # the seeded bad image

        # The canary finishes though the window shut; the next wave waits, saying until when.
        until(
            lambda: rollout.entries.filter(pk=canary.pk, status=DONE).exists(),
            "the canary to finish after the window shut",
            timeout=240,
            explain=lambda: _entries(rollout),
        )
        _swept_twice(rollout)
        waiting = rollout.entries.filter(wave=1)
        assert [(e.status, e.reason, e.run_id) for e in waiting] == [(W, OPENS, None)] * 2
        assert _rollout(rollout.pk).state == RolloutState.RUNNING

        # The next window opens: the sweep starts the wave, and the bad image trips it.
        wall.set(NEXT_ONE)
        paused = until(
            lambda: Rollout.objects.filter(pk=rollout.pk, state=RolloutState.PAUSED).first(),
            "the bad image to pause the rollout in the next window",
            timeout=240,
            explain=lambda: f"{_rollout(rollout.pk).state}, {_entries(rollout)}",
        )
        assert paused.reason.startswith("wave 2 failed 1 of 2 nodes (50% > 0%)")
        assert bad.serial in paused.reason
        (wave_1, wave_2) = report(paused)
        assert [n.entry.status for n in wave_1.nodes] == [DONE]
        assert [n.entry.status for n in wave_2.nodes] == [DONE, FAILED]
        ok, failed = wave_2.nodes
        assert all(n.entry.started_at > canary_finished(canary) for n in wave_2.nodes)
        assert failed.entry.node_id == bad.pk and failed.roll_back and not ok.roll_back
        assert failed.failed_phase == "bmc_firmware" and failed.as_dict()["failure"]
        assert {(c["component"], c.get("to")) for c in ok.changes} >= {("bmc", NEW_BMC)}
        assert lab.hall.node(ok.entry.node.serial).firmware["bmc"] == NEW_BMC
        assert lab.hall.node(bad.serial).firmware["bmc"] == old_bmc  # the BMC kept its old one

        # Roll back: the failed node goes back to the previous manifest, inside the window.
        lab.hall.clear_fault(bad.serial)
        back = roll_back(paused, None, actor=tech)
        assert back.manifest == before
        done = until(
            lambda: Rollout.objects.filter(pk=back.pk, state=RolloutState.FINISHED).first(),
            "the roll back to finish",
            timeout=240,
            explain=lambda: _entries(back),
        )
        (entry,) = done.entries.all()
        assert entry.node_id == bad.pk and entry.status == DONE
        assert entry.run.status == RunStatus.SUCCEEDED
        assert Node.objects.get(pk=bad.pk).manifest_id == before.pk
        assert lab.hall.node(bad.serial).firmware["bmc"] == old_bmc

        # The fleet firmware view after the updates and the roll back is the stored inventory,
        # row for row, and its BMC rows are the versions the BMCs themselves run.
        rows = firmware_rows(Node.objects.all())
        shown: Counter[tuple[str, str, str]] = Counter()
        for row in rows:
            shown[(row.kind, row.model, row.version)] += row.parts
        stored = Counter((c.kind, c.model, c.firmware_version) for c in Component.objects.all())
        assert shown == stored
        bmcs: Counter[str] = Counter()
        for row in rows:
            if row.kind == ComponentKind.BMC:
                bmcs[row.version] += row.parts
        running = Counter(lab.hall.node(n.serial).firmware["bmc"] for n in Node.objects.all())
        assert bmcs == running


def canary_finished(canary) -> datetime:
    canary.refresh_from_db()
    return canary.finished_at
