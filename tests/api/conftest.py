"""Fixtures of the API tests: a small fleet with runs, gates, decisions, wipes and events."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from acceptance.choices import DecisionKind, Verdict
from acceptance.gates import GateName
from acceptance.models import Decision, GateResult
from fleet.choices import ComponentKind, EventKind, NodeState
from fleet.events import record
from fleet.models import Component, Node
from provisioning.choices import CertificateResult, PhaseStatus, RunStatus
from provisioning.models import PhaseRecord, Run, WipeCertificate, WipeRequest
from tests import factories

BMC_USERNAME = "bmc-admin-user"
BMC_PASSWORD = "Sup3r-S3cret-BMC-pw"


def client_for(user) -> APIClient:
    """An API client authenticated by the user's token, or anonymous for None."""
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    # The cast's passwords are hashed at every set-up; PBKDF2's cost buys nothing in a test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def cast(alice, bob, dora, charlie):
    return {"alice": alice, "bob": bob, "dora": dora, "charlie": charlie, "anonymous": None}


def add_components(node: Node, gpus: int = 2) -> None:
    parts = [
        (ComponentKind.GPU, f"GPU {i}", "H100-SXM5-80GB", "96.00.99.00.01") for i in range(gpus)
    ]
    parts += [
        (ComponentKind.NIC, "NIC 0", "ConnectX-7", "28.43.1014"),
        (ComponentKind.DPU, "DPU 0", "BlueField-3", "32.41.1000"),
        (ComponentKind.NVME, "NVMe 0", "PM1743", "GDC7302Q"),
        (ComponentKind.BMC, "BMC", "iDRAC9", "7.10.30.00"),
    ]
    Component.objects.bulk_create(
        Component(
            node=node,
            kind=kind,
            slot=slot,
            model=model,
            serial=f"{node.serial}-{slot.replace(' ', '')}",
            part_number=f"PN-{kind}",
            firmware_version=fw,
        )
        for kind, slot, model, fw in parts
    )


def set_state(node: Node, state: str) -> None:
    # Test set-up only: put the node in a state without going through the lifecycle table.
    Node.objects.filter(pk=node.pk).update(state=state)
    node.refresh_from_db()


@pytest.fixture
def fleet(db, alice, bob, manifest, profile):
    """Two racks, four nodes in different states, one run with phases and gates, a wipe."""
    r1 = factories.make_rack("R01")
    r2 = factories.make_rack("R02")
    creds = {"bmc_username": BMC_USERNAME, "bmc_password": BMC_PASSWORD}
    good = factories.make_node("SN-GOOD", rack=r1, position=1, manifest=manifest, **creds)
    bad = factories.make_node("SN-BAD", rack=r1, position=3, manifest=manifest, **creds)
    new = factories.make_node("SN-NEW", rack=r2, position=1, **creds)
    served = factories.make_node("SN-SERVED", rack=r2, position=5, manifest=manifest, **creds)
    for n in (good, bad, new, served):
        add_components(n)
    set_state(good, NodeState.AWAITING_APPROVAL)
    set_state(bad, NodeState.QUARANTINED)
    set_state(served, NodeState.IN_SERVICE)

    now = timezone.now()
    runs = {}
    for n, verdict in ((good, Verdict.PASS), (bad, Verdict.FAIL)):
        run = Run.objects.create(
            node=n,
            manifest=manifest,
            status=RunStatus.SUCCEEDED if verdict == Verdict.PASS else RunStatus.FAILED,
            started_by=bob,
            started_at=now - timedelta(hours=2),
            finished_at=now,
        )
        PhaseRecord.objects.create(
            run=run,
            phase="preflight",
            order=0,
            status=PhaseStatus.DONE,
            attempts=1,
            started_at=now - timedelta(hours=2),
            finished_at=now - timedelta(hours=2) + timedelta(seconds=42),
        )
        PhaseRecord.objects.create(
            run=run,
            phase="bmc_firmware",
            order=4,
            status=PhaseStatus.DONE,
            attempts=2,
            started_at=now - timedelta(hours=1),
            finished_at=now - timedelta(minutes=45),
        )
        GateResult.objects.create(
            run=run, node=n, gate=GateName.ATTESTATION, verdict=Verdict.PASS, metrics={"ok": 1}
        )
        GateResult.objects.create(
            run=run,
            node=n,
            gate=GateName.GPU_HEALTH,
            verdict=verdict,
            raw_output={"dcgm": "GPU 3: XID 79 ..."},
            findings=(
                [{"part": "GPU 3", "part_serial": "X3", "kind": "xid", "message": "GPU 3: XID 79"}]
                if verdict == Verdict.FAIL
                else []
            ),
        )
        runs[n.serial] = run
    Decision.objects.create(node=good, run=runs["SN-GOOD"], kind=DecisionKind.APPROVE, actor=bob)
    Decision.objects.create(
        node=bad, run=runs["SN-BAD"], kind=DecisionKind.QUARANTINE, actor=bob, reason="XID 79"
    )
    wipe = WipeRequest.objects.create(tenant="acme", allocation_ref="alloc-1", requested_by=alice)
    wipe.nodes.add(served)
    WipeCertificate.objects.create(
        wipe_request=wipe,
        node=served,
        run=None,
        result=CertificateResult.PASSED,
        drives=[{"serial": "SN-SERVED-NVMe0", "method": "nvme sanitize crypto", "result": "ok"}],
        requested_by="alice",
        started_at=now - timedelta(minutes=10),
        finished_at=now,
    )
    record(good, EventKind.PHASE_RETRY, actor_label="engine", data={"error_kind": "bmc_timeout"})
    record(bad, EventKind.PHASE_FAILED, actor_label="engine", data={"error_kind": "bmc_auth"})
    record(bad, EventKind.PHASE_RETRY, actor_label="engine", data={"error_kind": "bmc_timeout"})
    return {
        "racks": (r1, r2),
        "nodes": {n.serial: n for n in (good, bad, new, served)},
        "runs": runs,
        "wipe": wipe,
        "manifest": manifest,
        "profile": profile,
    }
