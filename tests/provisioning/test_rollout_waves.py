"""A rollout in waves (issue 36): a canary first, then growing batches, each only after the one
before settled within its failure threshold; inside each site's maintenance windows; under caps
per site and per rack."""

from __future__ import annotations

from datetime import datetime, time
from zoneinfo import ZoneInfo

import pytest
from rest_framework.test import APIClient

from fleet.choices import NodeState
from fleet.models import MaintenanceWindow, Node, Site
from provisioning.choices import RolloutNodeStatus, RolloutState
from provisioning.day2.rollouts import advance_rollout, resume_rollout, start_rollout
from provisioning.day2.waves import BadWaves, WavePolicy, parse_policy
from provisioning.models import Rollout
from tests import factories

from .test_rollouts import fail, provisioned, statuses, succeed

pytestmark = pytest.mark.django_db
W, RUNNING, DONE, FAILED = (
    RolloutNodeStatus.WAITING,
    RolloutNodeStatus.RUNNING,
    RolloutNodeStatus.DONE,
    RolloutNodeStatus.FAILED,
)


def _fleet(manifest, placement):
    """Failed nodes on `manifest` placed as (site, rack) pairs, then a newer one published."""
    nodes = []
    for index, (site, rack) in enumerate(placement, start=1):
        where = factories.make_rack(rack, site=site)
        nodes.append(provisioned(NodeState.FAILED, manifest, rack=where, position=index))
    new = manifest.clone_as_draft()
    new.publish()
    return new, nodes


def _runs(rollout: Rollout):
    return [e.run for e in rollout.entries.order_by("order")]


def test_waves_grow_from_a_canary_each_after_the_last_settled(manifest, profile, bob):
    new, nodes = _fleet(manifest, [("hall-1", "R01")] * 7)
    policy = WavePolicy(canary=1, wave_growth=2)
    rollout = start_rollout(new, actor=bob, concurrency=10, policy=policy)
    assert list(rollout.entries.order_by("order").values_list("wave", flat=True)) == [
        0, 1, 1, 2, 2, 2, 2,
    ]  # fmt: skip
    assert statuses(rollout) == [RUNNING] + [W] * 6
    succeed(_runs(rollout)[0])
    advance_rollout(rollout.pk)
    assert statuses(rollout) == [DONE, RUNNING, RUNNING] + [W] * 4
    succeed(_runs(rollout)[1])
    advance_rollout(rollout.pk)
    # Wave 3 waits for the whole of wave 2, though the concurrency has room.
    assert statuses(rollout) == [DONE, DONE, RUNNING] + [W] * 4
    succeed(_runs(rollout)[2])
    advance_rollout(rollout.pk)
    assert statuses(rollout) == [DONE] * 3 + [RUNNING] * 4


def test_a_wave_failing_past_its_threshold_pauses_the_rollout_naming_the_nodes(
    manifest, profile, bob
):
    new, nodes = _fleet(manifest, [("hall-1", "R01")] * 4)
    policy = WavePolicy(canary=1, wave_growth=3, failure_threshold_pct=0)
    rollout = start_rollout(new, actor=bob, concurrency=10, policy=policy)
    fail(_runs(rollout)[0], "BMC refused the image: signature check failed")
    rollout = advance_rollout(rollout.pk)
    assert rollout.state == RolloutState.PAUSED
    assert rollout.reason.startswith("wave 1 failed 1 of 1 nodes (100% > 0%)")
    assert nodes[0].serial in rollout.reason and "signature check failed" in rollout.reason
    assert statuses(rollout) == [FAILED, W, W, W]

    # A person saw it and resumes: the next wave starts and the canary does not pause it again.
    rollout = resume_rollout(rollout, actor=bob)
    assert rollout.state == RolloutState.RUNNING
    assert statuses(rollout) == [FAILED, RUNNING, RUNNING, RUNNING]
    assert rollout.waves_cleared == 1


def test_a_rollout_paused_on_its_last_wave_stays_paused_with_its_reason(manifest, profile, bob):
    new, nodes = _fleet(manifest, [("hall-1", "R01")] * 3)
    policy = WavePolicy(canary=1, wave_growth=2, failure_threshold_pct=0)
    rollout = start_rollout(new, actor=bob, concurrency=10, policy=policy)
    succeed(_runs(rollout)[0])
    advance_rollout(rollout.pk)
    succeed(_runs(rollout)[1])
    fail(_runs(rollout)[2], "bmc image failed verification")
    rollout = advance_rollout(rollout.pk)
    assert rollout.state == RolloutState.PAUSED
    assert statuses(rollout) == [DONE, DONE, FAILED]
    # Every node is settled, and sweep after sweep the rollout still waits for a person.
    for _ in range(2):
        rollout = advance_rollout(rollout.pk)
        assert rollout.state == RolloutState.PAUSED and rollout.finished_at is None
        assert rollout.reason.startswith("wave 2 failed 1 of 2 nodes (50% > 0%)")
    # Resuming accepts the failed wave: nothing is left to start, so it finishes.
    rollout = resume_rollout(rollout, actor=bob)
    assert rollout.state == RolloutState.FINISHED and rollout.finished_at is not None


def test_nodes_start_only_inside_their_sites_maintenance_window(manifest, profile, bob):
    new, nodes = _fleet(manifest, [("berlin", "B01"), ("berlin", "B01"), ("austin", "A01")])
    berlin = Site.objects.get(name="berlin")
    berlin.time_zone = "Europe/Berlin"
    berlin.save()
    # 22:00 to 04:00 Berlin time, weeknights.
    MaintenanceWindow.objects.create(site=berlin, days="mon-fri", start=time(22), end=time(4))
    monday_noon = datetime(2026, 11, 23, 11, 0, tzinfo=ZoneInfo("UTC"))  # 12:00 in Berlin
    rollout = start_rollout(new, actor=bob, concurrency=5, now=monday_noon)  # one wave
    by_node = {e.node_id: e for e in rollout.entries.all()}
    # Austin has no window: always open. Berlin's wait, saying when theirs opens.
    assert by_node[nodes[2].pk].status == RUNNING
    waiting = by_node[nodes[0].pk]
    assert waiting.status == W
    assert (
        waiting.reason == "waiting for berlin's maintenance window (opens Mon 22:00 Europe/Berlin)"
    )

    # Tuesday 01:30 Berlin: inside Monday night's window, which runs past midnight.
    tuesday_night = datetime(2026, 11, 24, 0, 30, tzinfo=ZoneInfo("UTC"))
    advance_rollout(rollout.pk, now=tuesday_night)
    assert set(statuses(rollout)) == {RUNNING}


def test_a_site_whose_windows_cannot_be_read_holds_its_nodes_and_no_other(manifest, profile, bob):
    new, nodes = _fleet(manifest, [("mars", "M01"), ("austin", "A01")])
    mars = Site.objects.get(name="mars")
    MaintenanceWindow.objects.create(site=mars, days="daily", start=time(0), end=time(23, 59))
    Site.objects.filter(pk=mars.pk).update(time_zone="Mars/Olympus")  # past the admin's check
    rollout = start_rollout(new, actor=bob, concurrency=5)
    held, other = rollout.entries.get(node=nodes[0]), rollout.entries.get(node=nodes[1])
    assert other.status == RUNNING and held.status == W
    assert held.reason.startswith("waiting: mars's maintenance windows cannot be read")
    assert "Mars/Olympus" in held.reason


def test_site_and_rack_caps_bound_the_nodes_in_flight(manifest, profile, bob):
    placement = [("hall-1", "R01")] * 3 + [("hall-1", "R02")] * 2 + [("hall-2", "R09")] * 2
    new, nodes = _fleet(manifest, placement)
    rollout = start_rollout(
        new, actor=bob, concurrency=10, policy=WavePolicy(site_cap=3, rack_cap=2)
    )
    running = [Node.objects.get(pk=e.node_id) for e in rollout.entries.filter(status=RUNNING)]
    by_rack: dict[str, int] = {}
    by_site: dict[str, int] = {}
    for node in running:
        by_rack[node.rack.name] = by_rack.get(node.rack.name, 0) + 1
        by_site[node.rack.site.name] = by_site.get(node.rack.site.name, 0) + 1
    assert by_rack == {"R01": 2, "R02": 1, "R09": 2}
    assert by_site == {"hall-1": 3, "hall-2": 2}
    held = rollout.entries.get(node=nodes[2])
    assert held.reason == "waiting: 2 node(s) of rack R01 in flight (the rack cap)"
    held = rollout.entries.get(node=nodes[4])
    assert held.reason == "waiting: 3 node(s) of hall-1 in flight (the site cap)"


def test_each_wave_takes_from_every_site_so_the_site_caps_add_up(manifest, profile, bob):
    placement = [("hall-1", "R01")] * 4 + [("hall-2", "R09")] * 4
    new, nodes = _fleet(manifest, placement)
    policy = WavePolicy(canary=2, wave_growth=3, site_cap=2)
    rollout = start_rollout(new, actor=bob, concurrency=8, policy=policy)
    entries = list(rollout.entries.order_by("order").select_related("node__rack__site"))
    sites = [(e.wave, e.node.rack.site.name) for e in entries]
    # The canary is one node of each hall, and each hall's own order is kept.
    assert sites[:2] == [(0, "hall-1"), (0, "hall-2")]
    assert [e.node for e in entries if e.node.rack.site.name == "hall-1"] == nodes[:4]
    succeed(_runs(rollout)[0])
    succeed(_runs(rollout)[1])
    advance_rollout(rollout.pk)
    # Wave 1 (six nodes) runs two per hall at once: each hall's cap, both halls busy.
    running = rollout.entries.filter(status=RUNNING).select_related("node__rack__site")
    assert sorted(e.node.rack.site.name for e in running) == ["hall-1"] * 2 + ["hall-2"] * 2


def test_nodes_behind_one_bmc_take_their_turn(manifest, profile, bob):
    new, nodes = _fleet(manifest, [("hall-1", "R01")] * 3)
    # A blade's BMC serves two nodes, each by its own system's path.
    Node.objects.filter(pk=nodes[0].pk).update(bmc_address="https://10.0.0.9/Systems/Node0")
    Node.objects.filter(pk=nodes[1].pk).update(bmc_address="https://10.0.0.9/Systems/Node1")
    rollout = start_rollout(new, actor=bob, concurrency=5)
    assert statuses(rollout) == [RUNNING, W, RUNNING]
    held = rollout.entries.get(node=nodes[1])
    assert (
        held.reason
        == f"waiting: its BMC is busy with {nodes[0].serial} (one node per BMC at a time)"
    )
    succeed(_runs(rollout)[0])
    advance_rollout(rollout.pk)
    assert statuses(rollout) == [DONE, RUNNING, RUNNING]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"canary": -1}, "canary must be a whole number from 0"),
        ({"wave_growth": 0}, "wave_growth must be a whole number from 1"),
        ({"failure_threshold_pct": 101}, "failure_threshold_pct"),
        ({"site_cap": "two"}, "site_cap"),
        ({"rack_cap": True}, "rack_cap"),
    ],
)
def test_a_wave_setting_out_of_range_is_refused_naming_it(data, words):
    with pytest.raises(BadWaves, match=words):
        parse_policy(data)


def test_the_api_starts_a_rollout_in_waves_and_refuses_a_bad_setting(manifest, profile, bob):
    new, nodes = _fleet(manifest, [("hall-1", "R01")] * 3)
    client = APIClient()
    client.force_authenticate(bob)
    bad = client.post(f"/api/v1/manifests/{new.pk}/rollouts/", {"canary": 0.5}, format="json")
    assert bad.status_code == 400 and "canary" in bad.json()["detail"]
    assert not Rollout.objects.exists()
    answer = client.post(
        f"/api/v1/manifests/{new.pk}/rollouts/",
        {"concurrency": 3, "canary": 1, "failure_threshold_pct": 10},
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert (body["canary"], body["failure_threshold_pct"]) == (1, 10)
    assert [n["wave"] for n in body["nodes"]] == [0, 1, 1]
    assert [n["status"]["value"] for n in body["nodes"]] == ["running", "waiting", "waiting"]
