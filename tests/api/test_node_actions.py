"""Lifecycle verbs on nodes over the API, and uploads of a manual tool run's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptance.models import GateResult
from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from tests.api.conftest import client_for

SAMPLES = Path(__file__).resolve().parents[1] / "acceptance" / "samples"


def _awaiting(node) -> Node:
    Node.objects.filter(pk=node.pk).update(state=NodeState.AWAITING_APPROVAL)
    node.refresh_from_db()
    return node


@pytest.mark.django_db
def test_a_tech_quarantines_with_a_reason_and_charlie_is_refused(node, bob, charlie):
    _awaiting(node)
    url = f"/api/v1/nodes/{node.pk}/quarantine/"
    assert client_for(charlie).post(url, {"reason": "x"}, format="json").status_code == 403
    assert client_for(bob).post(url, {}, format="json").status_code == 400
    answer = client_for(bob).post(url, {"reason": "fan noise"}, format="json")
    assert answer.status_code == 200 and answer.json()["state"] == NodeState.QUARANTINED
    again = client_for(bob).post(f"/api/v1/nodes/{node.pk}/approve/", {}, format="json")
    assert again.status_code in (400, 409)


@pytest.mark.django_db
def test_a_dcim_reader_can_do_nothing(node, dora):
    _awaiting(node)
    for verb in ("approve", "quarantine", "start-run"):
        answer = client_for(dora).post(f"/api/v1/nodes/{node.pk}/{verb}/", {"reason": "x"})
        assert answer.status_code == 403, verb
    assert Node.objects.get(pk=node.pk).state == NodeState.AWAITING_APPROVAL


@pytest.mark.django_db
def test_start_run_answers_202_then_409_while_one_is_active(
    node, bob, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        first = client_for(bob).post(f"/api/v1/nodes/{node.pk}/start-run/")
    assert first.status_code == 202 and first.json()["state"] == NodeState.PROVISIONING
    second = client_for(bob).post(f"/api/v1/nodes/{node.pk}/start-run/")
    assert second.status_code == 409


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("tool", "sample", "verdict"),
    [
        ("dcgm", "dcgm4_level3_pass.json", "pass"),
        ("dcgm", "dcgm3_level3_fail_gpu3.json", "fail"),
        ("nccl", "nccl_allreduce_truncated.txt", "error"),
        ("xid", "kern_xid79.log", "fail"),
    ],
)
def test_an_uploaded_output_is_parsed_and_kept_on_the_node(node, bob, tool, sample, verdict):
    text = (SAMPLES / sample).read_text()
    answer = client_for(bob).post(
        f"/api/v1/nodes/{node.pk}/gate-uploads/", {"tool": tool, "output": text}, format="json"
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["verdict"] == verdict
    result = GateResult.objects.get(pk=answer.json()["gate_result"])
    assert result.run is None and result.uploaded_by == bob and result.raw_output == {tool: text}
    if verdict == "fail":
        assert result.findings and all(f["part"] for f in result.findings)
    assert Event.objects.filter(node=node, kind=EventKind.GATE_RESULT, actor=bob).exists()


@pytest.mark.django_db
def test_an_upload_of_garbage_or_for_an_unknown_tool_is_a_clear_answer(node, bob, dora):
    url = f"/api/v1/nodes/{node.pk}/gate-uploads/"
    garbage = client_for(bob).post(url, {"tool": "fio", "output": "%%%"}, format="json")
    assert garbage.status_code == 201 and garbage.json()["verdict"] == "error"
    assert garbage.json()["error"]
    unknown = client_for(bob).post(url, {"tool": "hammer", "output": "x"}, format="json")
    assert unknown.status_code == 400
    assert (
        client_for(dora).post(url, {"tool": "fio", "output": "x"}, format="json").status_code == 403
    )


@pytest.mark.django_db
def test_the_node_panel_form_takes_an_uploaded_file(client, node, bob, charlie):
    from django.core.files.uploadedfile import SimpleUploadedFile

    text = (SAMPLES / "gpu_burn_gpu2_faulty_exit0.txt").read_bytes()
    form = {"tool": "gpu-burn", "file": SimpleUploadedFile("burn.txt", text)}
    client.force_login(charlie)
    client.post(f"/nodes/{node.pk}/upload/", form)
    assert not GateResult.objects.exists()
    client.force_login(bob)
    form["file"] = SimpleUploadedFile("burn.txt", text)
    answer = client.post(f"/nodes/{node.pk}/upload/", form)
    assert answer.status_code == 302
    result = GateResult.objects.get()
    assert result.verdict == "fail" and result.gate == "reference_job"


@pytest.mark.django_db
def test_run_actions_over_the_api_check_permissions_and_reasons(
    node, bob, alice, dora, django_capture_on_commit_callbacks
):
    from provisioning.models import Run

    with django_capture_on_commit_callbacks(execute=False):
        client_for(bob).post(f"/api/v1/nodes/{node.pk}/start-run/")
    run = Run.objects.get(node=node)
    base = f"/api/v1/runs/{run.pk}"
    assert client_for(dora).post(f"{base}/abort/", {"reason": "x"}).status_code == 403
    skip = client_for(bob).post(f"{base}/skip/", {"phase": "hgx_firmware", "reason": "x"})
    assert skip.status_code == 403  # skipping is a fleet admin's call
    no_reason = client_for(alice).post(f"{base}/skip/", {"phase": "hgx_firmware"})
    assert no_reason.status_code == 409 and "reason" in no_reason.json()["detail"]
    with django_capture_on_commit_callbacks(execute=False):
        skipped = client_for(alice).post(
            f"{base}/skip/", {"phase": "hgx_firmware", "reason": "RMA"}
        )
    assert skipped.status_code == 200
    assert run.phases.get(phase="hgx_firmware").status == "skipped"
    aborted = client_for(bob).post(f"{base}/abort/", {"reason": "wrong rack"})
    assert aborted.status_code == 200 and aborted.json()["status"] == "aborted"
    assert client_for(bob).post(f"{base}/abort/", {"reason": "again"}).status_code == 409
    assert Event.objects.filter(kind=EventKind.RUN_ACTION, actor=alice).exists()


@pytest.mark.django_db
def test_start_runs_on_a_rack_starts_every_startable_node_and_says_why_not_the_rest(
    rack, manifest, bob, dora, django_capture_on_commit_callbacks
):
    from provisioning.models import Run
    from tests import factories

    ready = [factories.make_node(rack=rack) for _ in range(3)]
    busy = factories.make_node(rack=rack)
    Node.objects.filter(pk=busy.pk).update(state=NodeState.IN_SERVICE)
    no_manifest = factories.make_node(rack=rack, sku=factories.make_sku("gb200-nvl72"))
    url = f"/api/v1/racks/{rack.pk}/start-runs/"
    assert client_for(dora).post(url).status_code == 403
    assert not Run.objects.exists()
    with django_capture_on_commit_callbacks(execute=False) as sent:
        answer = client_for(bob).post(url)
    assert answer.status_code == 202
    body = answer.json()
    assert sorted(map(int, body["started"])) == sorted(n.pk for n in ready)
    assert list(body["refused"]) == [str(no_manifest.pk)]
    assert "no published manifest" in body["refused"][str(no_manifest.pk)]
    assert set(
        Node.objects.filter(pk__in=[n.pk for n in ready]).values_list("state", flat=True)
    ) == {NodeState.PROVISIONING}
    assert Node.objects.get(pk=busy.pk).state == NodeState.IN_SERVICE
    for node_id, run_id in body["started"].items():
        assert Run.objects.get(pk=run_id).node_id == int(node_id)
    # The refused node rolled back alone; every started run's first step is sent.
    assert Node.objects.get(pk=no_manifest.pk).state == NodeState.ENROLLED
    assert sum(1 for c in sent if "send" in getattr(c, "__qualname__", "")) == len(ready)
