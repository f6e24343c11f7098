"""A body over a size limit is a 413 naming the limit, on the agent API and the REST API; nothing
is stored."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from acceptance import uploads
from acceptance.models import GateResult
from provisioning.agents.sessions import CheckIn, check_in
from provisioning.models import AgentSession
from tests.api.conftest import client_for
from tests.factories import make_node
from tests.support.scenes import booted_secret, make_run

pytestmark = pytest.mark.django_db

# Django's limit on a body it reads into memory, lowered so the test sends kilobytes, not megabytes.
LIMIT = 4096


@pytest.fixture
def small_limit(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    return LIMIT


def test_an_agent_check_in_over_the_limit_is_413(small_limit, rack):
    node = make_node(rack=rack)
    body = {"serial": node.serial, "macs": [], "boot_id": "b", "credential": "x" * (2 * LIMIT)}
    answer = Client().post("/agent/v1/checkin", json.dumps(body), content_type="application/json")
    assert answer.status_code == 413
    assert answer.json() == {"error": f"body is larger than the limit of {LIMIT} bytes"}
    assert not AgentSession.objects.exists()


def test_an_agent_poll_over_the_limit_is_413_and_the_session_stays(small_limit, rack):
    node = make_node(rack=rack)
    claim = CheckIn(node.serial, node.mac_addresses, "boot-1", "ephemeral", _secret(node))
    session, token = check_in(claim)
    answer = Client().post(
        "/agent/v1/poll",
        json.dumps({"known": list(range(LIMIT))}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert answer.status_code == 413
    assert answer.json() == {"error": f"body is larger than the limit of {LIMIT} bytes"}
    session.refresh_from_db()
    assert session.revoked_at is None


def _secret(node) -> str:
    return booted_secret(make_run(node, phases_done=2))


def _upload_url(node) -> str:
    return f"/api/v1/nodes/{node.pk}/gate-uploads/"


@pytest.mark.parametrize("body_format", ["json", "multipart"])
def test_a_rest_body_over_the_limit_is_413_naming_it(small_limit, node, bob, body_format):
    output = "x" * (2 * LIMIT)
    answer = client_for(bob).post(
        _upload_url(node), {"tool": "fio", "output": output}, format=body_format
    )
    assert answer.status_code == 413
    assert answer.json() == {"detail": f"the body is larger than the limit of {LIMIT} bytes"}
    assert not GateResult.objects.exists()


def test_a_gate_upload_over_its_own_limit_is_413(node, bob, monkeypatch):
    # The upload's own limit (20 MiB), lowered under Django's so the body is read.
    monkeypatch.setattr(uploads, "MAX_UPLOAD", 1024 * 1024)
    output = "x" * (1024 * 1024 + 1)
    answer = client_for(bob).post(
        _upload_url(node), {"tool": "fio", "output": output}, format="json"
    )
    assert answer.status_code == 413
    assert answer.json() == {"detail": "output larger than 1 MiB"}
    assert not GateResult.objects.exists()
