"""Day 2 against a real Slurm (skipped without it): a quarantine cordons the node, an admission
resumes it, and the suspect-node loop runs end to end through the lab's real pipeline."""

from __future__ import annotations

import subprocess

import pytest
from rest_framework.test import APIClient

from acceptance import decisions
from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from fleet.roles import FLEET_ADMIN
from lab.run import LabRun, LabRunConfig
from provisioning.choices import RunKind, RunStatus
from provisioning.models import Run
from provisioning.schedulers.slurm import parse_node
from tests import factories
from tests.api.conftest import client_for
from tests.support.slurm import needs_slurm, show, until

from .conftest import allocated_node

pytestmark = needs_slurm

TOKEN = "am-token-for-the-lab"


def _drained_flag() -> bool:
    return "DRAIN" in parse_node(show())[1]


def _put(node: Node, state: str) -> None:
    # Set-up only: put the node where the test needs it without walking the lifecycle.
    Node.objects.filter(pk=node.pk).update(state=state)
    node.refresh_from_db()


def test_quarantine_cordons_an_in_service_node_and_admission_resumes_it(
    alice, rack, manifest, slurm, settings, eager_celery, django_capture_on_commit_callbacks
):
    settings.GREENLIGHT_SCHEDULER = "slurm"
    node = allocated_node(rack)
    Node.objects.filter(pk=node.pk).update(hostname=slurm)
    node.refresh_from_db()

    with django_capture_on_commit_callbacks(execute=True):
        decisions.quarantine(node, alice, reason="fan noise on GPU 3")

    assert _drained_flag()
    assert "Reason=greenlight: quarantined: fan noise on GPU 3" in show()
    cordoned = Event.objects.get(node=node, kind=EventKind.UPDATED)
    assert (
        cordoned.message
        == f"cordoned as {slurm} in Slurm: greenlight: quarantined: fan noise on GPU 3"
    )

    # Repaired and re-checked (set-up), then admitted: Slurm places work on it again.
    _put(node, NodeState.AWAITING_APPROVAL)
    with django_capture_on_commit_callbacks(execute=True):
        decisions.approve(node, alice, reason="fan replaced", override=True)

    base, flags, _ = parse_node(show())
    assert (base, "DRAIN" in flags) == ("IDLE", False)
    assert Event.objects.filter(node=node, message=f"resumed as {slurm} in Slurm").exists()

    # A first admission (the node never left Slurm's pool) is not an error either.
    _put(node, NodeState.AWAITING_APPROVAL)
    with django_capture_on_commit_callbacks(execute=True):
        decisions.approve(node, alice, reason="again", override=True)
    assert Event.objects.filter(node=node, message=f"resumed as {slurm} in Slurm").count() == 2
    assert not Event.objects.filter(node=node, kind=EventKind.ATTENTION).exists()


def test_a_node_slurm_does_not_know_is_admitted_and_a_person_is_asked(
    alice, rack, manifest, slurm, settings, eager_celery, django_capture_on_commit_callbacks
):
    settings.GREENLIGHT_SCHEDULER = "slurm"
    node = allocated_node(rack, state=NodeState.AWAITING_APPROVAL)

    with django_capture_on_commit_callbacks(execute=True):
        decisions.approve(node, alice, reason="ok", override=True)

    node.refresh_from_db()
    assert node.state == NodeState.IN_SERVICE
    asked = Event.objects.get(node=node, kind=EventKind.ATTENTION)
    assert asked.message.startswith("could not resume the node in the scheduler")


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_suspect_node_loop_runs_end_to_end_against_slurm(tmp_path, slurm, settings):
    # The test process (approvals, the API) and the lab's workers (the drain phase) both use it.
    settings.GREENLIGHT_SCHEDULER = "slurm"
    settings.GREENLIGHT_ALERTMANAGER_TOKEN = TOKEN
    config = LabRunConfig(
        nodes=2, faults="none", speed=400, soak_hours=0.5, timeout_s=300,
        extra_env={"GREENLIGHT_SCHEDULER": "slurm"},
    )  # fmt: skip
    (tmp_path / "lab").mkdir()
    with LabRun(config, log_dir=tmp_path / "lab") as lab:
        first = lab.run_pass()
        assert {n["final_state"] for n in first["nodes"]} == {NodeState.AWAITING_APPROVAL}, first
        alice = factories.make_user("alice", FLEET_ADMIN)
        node, partner = Node.objects.filter(pk__in=[n.pk for n in lab.nodes]).order_by("position")
        Node.objects.filter(pk=node.pk).update(hostname=slurm)
        node.refresh_from_db()
        for each in (node, partner):
            decisions.approve(each, alice, reason="lab rack accepted")

        # A tenant's job runs on the node when a health check reports it suspect.
        job = subprocess.run(
            ["sbatch", "--parsable", "-w", slurm, "-o", "/dev/null", "--wrap", "sleep 300"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        until(lambda: parse_node(show())[0] in ("ALLOCATED", "MIXED"), "the job to start")
        answer = client_for(alice).post(
            f"/api/v1/nodes/{node.pk}/suspect/", {"reason": "DCGM: XID 48 on GPU 5"}, format="json"
        )
        assert answer.status_code == 202, answer.json()
        run = Run.objects.get(node=node, kind=RunKind.SUSPECT)

        # Cordoned at once; the run waits in its drain while the job still runs.
        until(_drained_flag, "the cordon")
        assert parse_node(show())[0] in ("ALLOCATED", "MIXED")
        assert f"Reason=greenlight: suspect node {node.serial}" in show()
        until(lambda: "leave Slurm" in Run.objects.get(pk=run.pk).wait_reason, "the drain wait")
        node.refresh_from_db()
        assert node.state == NodeState.RELEASING

        subprocess.run(["scancel", job], check=True)
        assert lab.wait({node.pk: run}), "the suspect run did not end in time"
        run.refresh_from_db()
        node.refresh_from_db()
        assert (run.status, node.state) == (RunStatus.SUCCEEDED, NodeState.AWAITING_APPROVAL), (
            run.last_error
        )
        phases = set(run.phases.values_list("phase", flat=True))
        assert "drain" in phases and not {"os_install", "secure_erase"} & phases
        # Re-checked but not yet admitted: Slurm still keeps work off it.
        assert _drained_flag()

        decisions.approve(node, alice, reason="re-checked after the XID report")
        # The resume is a task the lab's worker runs once the approval commits.
        until(lambda: not _drained_flag(), "the resume")
        base, flags, _ = parse_node(show())
        assert (base, "DRAIN" in flags) == ("IDLE", False)

        # The same node, now with a GPU off the bus, reported by Alertmanager this time.
        lab.hall.set_fault(node.serial, "gpu_xid79:3")
        alertmanager = APIClient()
        alertmanager.credentials(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        body = {
            "version": "4",
            "status": "firing",
            "alerts": [
                {
                    "status": "firing",
                    "labels": {"alertname": "GpuFellOffTheBus", "instance": f"{slurm}:9400"},
                    "annotations": {"summary": "XID 79 on GPU 3"},
                }
            ],
        }
        heard = alertmanager.post("/api/v1/alertmanager/", body, format="json")
        assert heard.json()["alerts"][0]["outcome"] == "started", heard.json()
        broken = Run.objects.get(pk=heard.json()["alerts"][0]["run"])
        assert lab.wait({node.pk: broken}), "the second suspect run did not end in time"

    broken.refresh_from_db()
    node.refresh_from_db()
    assert broken.status == RunStatus.FAILED and "GPU 3" in broken.last_error
    assert node.state == NodeState.BREAK_FIX
    moves = Event.objects.filter(node=node, kind=EventKind.STATE_CHANGED).order_by("pk")
    last_two = [m.data["to"] for m in moves][-2:]
    assert last_two == [NodeState.QUARANTINED, NodeState.BREAK_FIX]
    # Sent to repair, never re-admitted: the scheduler still keeps work off it.
    assert _drained_flag()
