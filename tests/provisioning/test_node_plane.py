"""The node plane (greenlight/node_wsgi.py): the agents' API and the boot plane, with only the
middleware and the URLs those requests need (issue 32: a poll paid for sessions, auth, messages,
CSP and axes it never used)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings

from fleet.choices import NodeState
from tests.support.scenes import booted_secret, make_run, walk

ROOT = Path(__file__).resolve().parents[2]


def test_the_node_plane_keeps_only_the_security_middleware_and_its_own_urls():
    probe = (
        "import json, django; django.setup(); from django.conf import settings; "
        "print(json.dumps([settings.MIDDLEWARE, settings.ROOT_URLCONF]))"
    )
    env = {
        **os.environ,
        "GREENLIGHT_NODE_PLANE": "1",
        "DJANGO_SETTINGS_MODULE": "greenlight.settings",
    }
    env.pop("GREENLIGHT_QUERY_LOG_DIR", None)
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    middleware, urlconf = json.loads(out.stdout.strip().splitlines()[-1])
    assert middleware == [
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
    ]
    assert urlconf == "greenlight.node_urls"


@pytest.mark.django_db
@override_settings(
    ROOT_URLCONF="greenlight.node_urls",
    MIDDLEWARE=[
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
    ],
)
def test_agents_check_in_and_poll_there_and_the_pages_are_not_served(node):
    walk(node, NodeState.PROVISIONING)
    run = make_run(node, phases_done=2)
    client = Client(REMOTE_ADDR="10.20.0.5")
    body = {
        "serial": node.serial,
        "macs": node.mac_addresses,
        "boot_id": "b1",
        "environment": "ephemeral",
        "credential": booted_secret(run),
    }
    answer = client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")
    assert answer.status_code == 200, answer.content
    token = answer.json()["token"]
    poll = client.post(
        "/agent/v1/poll",
        "{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert poll.status_code == 200 and poll.json()["commands"] == []
    assert client.get("/boot/v1/ipxe", {"mac": "02:00:00:00:00:99"}).status_code == 404
    for page in ("/", "/admin/", "/api/v1/nodes/", "/wipes/", "/accounts/login/"):
        assert client.get(page).status_code == 404, page
    # The Host header is still checked against ALLOWED_HOSTS.
    assert client.get("/boot/v1/ipxe", HTTP_HOST="evil.example").status_code == 400
