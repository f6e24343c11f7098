"""A rollout on a real lab rack (issue 36): a new manifest's BMC image that one node's BMC
refuses (a seeded bad image) fails the canary; the rollout pauses with the report naming the node
and the phase; "roll back" returns the node to the previous manifest, whose version its BMC runs."""

from __future__ import annotations

import pytest
import yaml

from fleet.models import Manifest, Node
from fleet.roles import SITE_TECH
from lab.artifacts import artifact_sha256
from lab.run import LabRun, LabRunConfig
from provisioning.choices import RolloutNodeStatus, RolloutState, RunStatus
from provisioning.day2.rollout_report import report, roll_back
from provisioning.day2.rollouts import start_rollout
from provisioning.day2.waves import WavePolicy
from provisioning.models import Rollout
from tests import factories
from tests.support.slurm import until

NEW_BMC = "7.10.50.00"


def _publish_new_bmc(manifest: Manifest) -> Manifest:
    """The SKU's next manifest: the same, with a newer BMC image."""
    draft = manifest.clone_as_draft()
    spec = yaml.safe_load(draft.yaml_text)
    bmc = spec["firmware"]["bmc"]
    name = f"bmc-{NEW_BMC}.bin"
    bmc.update(
        version=NEW_BMC,
        url=bmc["url"].rsplit("/", 1)[0] + f"/{name}",
        sha256=artifact_sha256(name),
    )
    draft.yaml_text = yaml.safe_dump(spec, sort_keys=False)
    draft.full_clean()
    draft.save()
    draft.publish()
    return draft


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_bad_image_trips_the_canary_and_roll_back_restores_the_node(tmp_path):
    config = LabRunConfig(
        nodes=3, faults="none", flavour="dell", speed=400, soak_hours=0.25, timeout_s=300
    )
    with LabRun(config, log_dir=tmp_path) as lab:
        first = lab.run_pass()
        assert first["finished"], first
        nodes = list(
            Node.objects.filter(pk__in=[n.pk for n in lab.nodes]).order_by(
                "rack", "position", "serial"
            )
        )
        before = Manifest.objects.get(pk=nodes[0].manifest_id)
        old_bmc = yaml.safe_load(before.yaml_text)["firmware"]["bmc"]["version"]
        new = _publish_new_bmc(before)
        canary = nodes[0]
        lab.hall.set_fault(canary.serial, "firmware_update_fails:bmc")
        tech = factories.make_user("tess", SITE_TECH)
        rollout = start_rollout(
            new, actor=tech, concurrency=3, policy=WavePolicy(canary=1, failure_threshold_pct=0)
        )
        assert rollout.entries.get(wave=0).node_id == canary.pk

        paused = until(
            lambda: Rollout.objects.filter(pk=rollout.pk, state=RolloutState.PAUSED).first(),
            "the canary's failure to pause the rollout",
            timeout=240,
        )
        assert "wave 1 failed 1 of 1 nodes" in paused.reason and canary.serial in paused.reason
        (wave_1, wave_2) = report(paused)
        (failed,) = wave_1.nodes
        assert failed.roll_back and failed.failed_phase == "bmc_firmware"
        assert [n.entry.status for n in wave_2.nodes] == [RolloutNodeStatus.WAITING] * 2

        lab.hall.clear_fault(canary.serial)
        back = roll_back(paused, None, actor=tech)
        assert back.manifest == before
        done = until(
            lambda: Rollout.objects.filter(pk=back.pk, state=RolloutState.FINISHED).first(),
            "the roll back to finish",
            timeout=240,
        )
        (entry,) = done.entries.all()
        assert entry.status == RolloutNodeStatus.DONE and entry.run.status == RunStatus.SUCCEEDED
        lab_node = lab.hall.node(canary.serial)
        assert lab_node.firmware["bmc"] == old_bmc
