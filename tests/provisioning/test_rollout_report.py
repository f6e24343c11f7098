"""A rollout's report and its roll back (issue 36): per wave and node, the versions each
component went from and to, the time taken, the failure in the BMC's words; the failed nodes
returned to the manifest published before."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from provisioning.choices import PhaseStatus, RolloutNodeStatus, RolloutState, RunKind
from provisioning.core.engine import fail_run
from provisioning.day2.rollout_report import report, roll_back
from provisioning.day2.rollouts import RolloutRefused, advance_rollout, start_rollout
from provisioning.day2.waves import WavePolicy
from provisioning.models import PhaseRecord, Rollout, Run

from .test_rollout_waves import _fleet, _runs
from .test_rollouts import succeed

pytestmark = pytest.mark.django_db
BMC_WORDS = "the BMC refused the image: FirmwareImage signature is invalid (SYS051)"


def _fails_after_flashing_the_bmc(run: Run) -> None:
    """The run flashed the BMC, then the BIOS update failed with the BMC's words."""
    PhaseRecord.objects.filter(run=run, phase="bmc_firmware").update(
        status=PhaseStatus.DONE,
        changes=[{"component": "bmc", "from": "1.10.2", "to": "1.12.0"}],
    )
    run = Run.objects.select_related("node").get(pk=run.pk)
    record = run.phases.get(phase="bios_firmware")
    record.started_at = timezone.now()
    record.save()
    fail_run(run, record, BMC_WORDS)


@pytest.fixture
def tripped(manifest, profile, bob):
    """A canary that flashed its BMC and failed on its BIOS: the rollout paused."""
    new, nodes = _fleet(manifest, [("hall-1", "R01")] * 3)
    policy = WavePolicy(canary=1, failure_threshold_pct=0)
    rollout = start_rollout(new, actor=bob, concurrency=3, policy=policy)
    _fails_after_flashing_the_bmc(_runs(rollout)[0])
    return advance_rollout(rollout.pk), nodes, manifest


def test_the_report_names_what_changed_and_what_failed_per_wave(tripped):
    rollout, nodes, _ = tripped
    assert rollout.state == RolloutState.PAUSED
    first, second = report(rollout)
    assert (first.number, len(first.nodes), first.failure_pct) == (1, 1, 100.0)
    canary = first.nodes[0]
    assert canary.entry.node_id == nodes[0].pk and canary.roll_back
    assert canary.changes == [
        {"component": "bmc", "from": "1.10.2", "to": "1.12.0", "phase": "bmc_firmware"}
    ]
    assert canary.failed_phase == "bios_firmware"
    assert BMC_WORDS in canary.entry.reason
    assert canary.duration_s is not None and canary.duration_s >= 0
    assert [n.entry.status for n in second.nodes] == [RolloutNodeStatus.WAITING] * 2


def test_roll_back_returns_the_failed_nodes_to_the_previous_manifest(tripped, bob):
    rollout, nodes, previous = tripped
    previous.refresh_from_db()
    back = roll_back(rollout, None, actor=bob)
    assert back.manifest == previous and back.rollback_of == rollout
    (entry,) = back.entries.all()
    assert entry.node_id == nodes[0].pk and entry.status == RolloutNodeStatus.RUNNING
    # Recorded on the old manifest still (its update failed), it is reprovisioned anyway.
    assert (entry.run.kind, entry.run.manifest) == (RunKind.REPROVISION, previous)
    succeed(entry.run)
    assert advance_rollout(back.pk).state == RolloutState.FINISHED


def test_roll_back_refuses_nodes_of_another_rollout_and_a_sku_with_no_earlier_manifest(
    tripped, bob, manifest
):
    rollout, nodes, _ = tripped
    with pytest.raises(RolloutRefused, match="not in rollout"):
        roll_back(rollout, [nodes[0].pk, 999_999], actor=bob)
    Rollout.objects.filter(pk=rollout.pk).update(manifest=manifest)  # the SKU's first manifest
    rollout.refresh_from_db()
    with pytest.raises(RolloutRefused, match="nothing to roll back to"):
        roll_back(rollout, None, actor=bob)


def test_the_api_reports_and_rolls_back(tripped, bob):
    rollout, nodes, previous = tripped
    client = APIClient()
    client.force_authenticate(bob)
    body = client.get(f"/api/v1/rollouts/{rollout.pk}/report/").json()
    assert body["roll_back"] == [nodes[0].pk] and body["roll_back_to"] == previous.version
    canary = body["waves"][0]["detail"][0]
    assert (canary["failed_phase"], canary["changes"][0]["to"]) == ("bios_firmware", "1.12.0")
    assert BMC_WORDS in canary["failure"]
    refused = client.post(
        f"/api/v1/rollouts/{rollout.pk}/roll_back/", {"nodes": [123456]}, format="json"
    )
    assert refused.status_code == 400 and "not in rollout" in refused.json()["detail"]
    answer = client.post(f"/api/v1/rollouts/{rollout.pk}/roll_back/", {}, format="json")
    assert answer.status_code == 201
    assert [n["node"]["id"] for n in answer.json()["nodes"]] == [nodes[0].pk]


def test_the_rollout_page_shows_the_report_and_rolls_back(tripped, bob, client):
    rollout, nodes, previous = tripped
    client.force_login(bob)
    page = client.get(reverse("console:rollout", args=[rollout.pk])).content.decode()
    assert 'id="wave-1"' in page and "bmc: 1.10.2 → 1.12.0" in page
    assert "bios_firmware" in page and 'id="rollout-roll-back"' in page
    answer = client.post(
        reverse("console:rollout-roll-back", args=[rollout.pk]), {"node": [nodes[0].pk]}
    )
    back = Rollout.objects.get(rollback_of=rollout)
    assert answer.url == reverse("console:rollout", args=[back.pk])
    assert back.manifest == previous
