"""The board's pages without a browser: who sees what, decisions through the forms, snapshots."""

from __future__ import annotations

import pytest
from django.urls import reverse

from acceptance.models import Decision
from fleet.choices import NodeState
from fleet.models import Node
from tests import factories
from tests.support import scenes

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(rack, manifest):
    mix = {
        NodeState.IN_SERVICE: 2,
        NodeState.AWAITING_APPROVAL: 2,
        NodeState.PROVISIONING: 2,
        NodeState.QUARANTINED: 1,
        NodeState.FAILED: 1,
        NodeState.ENROLLED: 1,
    }
    return scenes.build_rack(rack, mix)


def login(client, user):
    client.force_login(user)
    return client


def test_anonymous_is_sent_to_the_login_page(client, rack):
    response = client.get(reverse("console:rack", args=[rack.pk]))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b"Sign in" in page.content


def test_charlie_without_a_role_is_refused_every_page(client, charlie, scene, rack):
    login(client, charlie)
    node = scene[0]
    for url in (
        reverse("console:overview"),
        reverse("console:rack", args=[rack.pk]),
        reverse("console:rack-snapshot", args=[rack.pk]),
        reverse("console:node-panel", args=[node.pk]),
    ):
        assert client.get(url).status_code == 403, url


def test_overview_counts_racks_and_filters(client, bob, scene, rack):
    other = factories.make_rack("R02")
    scenes.build_rack(other, {NodeState.IN_SERVICE: 3})
    login(client, bob)
    page = client.get(reverse("console:overview"))
    assert page.status_code == 200
    board = page.context["board"]
    assert board.total.total == 12 and board.total.counter[NodeState.IN_SERVICE] == 5
    assert [r.rack.name for b in board.sites for r in b.rows] == ["R01", "R02"]
    filtered = client.get(reverse("console:overview"), {"state": NodeState.FAILED})
    rows = [r for b in filtered.context["board"].sites for r in b.rows]
    assert [(r.rack.name, r.total) for r in rows] == [("R01", 1)]
    by_sku = client.get(reverse("console:overview"), {"sku": "no-such-sku"})
    assert b"Any SKU" in by_sku.content  # an unknown SKU is an invalid filter, not a crash


def test_rack_page_shows_slots_with_colour_icon_phase_and_progress(client, bob, scene, rack):
    login(client, bob)
    html = client.get(reverse("console:rack", args=[rack.pk])).content.decode()
    provisioning = scene[4]
    assert f'id="slot-{provisioning.pk}"' in html
    assert 'class="slot c-blue' in html and "↻" in html and 'role="progressbar"' in html
    assert 'class="slot c-green' in html and "✓" in html
    assert "s3cret-bmc-pass" not in html
    assert "Approve every passed node of rack" in html  # the confirmation dialog


def test_failed_node_panel_names_the_parts(client, bob, scene, rack):
    quarantined = scene[6]
    login(client, bob)
    html = client.get(reverse("console:rack", args=[rack.pk]), {"node": quarantined.pk}).content
    html = html.decode()
    assert "NIC 0: busbw 61% of line rate" in html and "GPU 3: XID 79" in html
    assert '<svg class="chart"' in html and "BIOS: 2.1.4 → 2.3.0" in html
    assert "s3cret-bmc-pass" not in html


def test_dora_sees_no_buttons_and_her_forged_post_is_refused(client, dora, scene, rack):
    waiting = scene[2]
    login(client, dora)
    html = client.get(reverse("console:rack", args=[rack.pk]), {"node": waiting.pk}).content
    assert b"approve-btn" not in html and b"quarantine-btn" not in html
    assert b"Approve every passed node" not in html and b"approve-all-btn" not in html
    response = client.post(reverse("console:node-approve", args=[waiting.pk]), {"reason": "x"})
    assert response.status_code == 403
    response = client.post(reverse("console:rack-approve-passed", args=[rack.pk]))
    assert response.status_code == 403
    waiting.refresh_from_db()
    assert waiting.state == NodeState.AWAITING_APPROVAL and not Decision.objects.exists()


def test_a_post_without_the_csrf_token_is_refused(bob, scene):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    response = client.post(reverse("console:node-approve", args=[scene[2].pk]))
    assert response.status_code == 403
    assert Node.objects.get(pk=scene[2].pk).state == NodeState.AWAITING_APPROVAL


def test_bob_approves_and_quarantines_through_the_forms(client, bob, scene, rack):
    waiting, other = scene[2], scene[3]
    login(client, bob)
    response = client.post(reverse("console:node-approve", args=[waiting.pk]), {"reason": ""})
    assert response.status_code == 302
    assert Node.objects.get(pk=waiting.pk).state == NodeState.IN_SERVICE
    response = client.post(reverse("console:node-quarantine", args=[other.pk]), {"reason": ""})
    assert Node.objects.get(pk=other.pk).state == NodeState.AWAITING_APPROVAL
    follow = client.get(response["Location"])
    assert b"a quarantine needs a reason" in follow.content
    client.post(reverse("console:node-quarantine", args=[other.pk]), {"reason": "PSU 2 smells"})
    assert Node.objects.get(pk=other.pk).state == NodeState.QUARANTINED
    assert Decision.objects.filter(actor=bob).count() == 2


def test_approve_all_passed_button(client, bob, scene, rack):
    login(client, bob)
    page = client.get(reverse("console:rack", args=[rack.pk])).content.decode()
    assert 'data-count="2">Approve 2 passed nodes</button>' in page
    response = client.post(reverse("console:rack-approve-passed", args=[rack.pk]), follow=True)
    assert b"Approved 2 node(s)" in response.content
    states = Node.objects.filter(rack=rack).values_list("state", flat=True)
    assert list(states).count(NodeState.IN_SERVICE) == 4
    # Nothing left to approve: the button says 0 and cannot be pressed; a forged post says so.
    page = client.get(reverse("console:rack", args=[rack.pk])).content.decode()
    assert 'data-count="0" disabled' in page and "Approve 0 passed nodes" in page
    response = client.post(reverse("console:rack-approve-passed", args=[rack.pk]), follow=True)
    assert b"passed every gate and awaits approval: none approved." in response.content
    assert b"Approved 0" not in response.content


def test_rack_snapshot_returns_changed_slots_since_a_seq(client, bob, scene, rack):
    login(client, bob)
    url = reverse("console:rack-snapshot", args=[rack.pk])
    full = client.get(url).json()
    assert full["full"] and len(full["slots"]) == len(scene)
    seq = full["seq"]
    mover = scene[8]  # enrolled
    scenes.walk(mover, NodeState.PROVISIONING)
    later = client.get(url, {"since": seq + 1000}).json()  # far ahead: nothing changed since
    assert later["slots"] == {} and later["seq"] > seq
    since = client.get(url, {"since": seq}).json()
    assert (
        str(mover.pk) in since["slots"]
        and 'data-state="provisioning"' in since["slots"][str(mover.pk)]
    )
    asked = client.get(url, {"since": seq + 1000, "nodes": str(scene[0].pk)}).json()
    assert list(asked["slots"]) == [str(scene[0].pk)]


def test_overview_snapshot_renders_the_same_body(client, bob, scene):
    login(client, bob)
    page = client.get(reverse("console:overview")).content.decode()
    snap = client.get(reverse("console:overview-snapshot")).json()
    assert snap["html"].strip() in page


def test_a_tech_sees_the_audit_and_upload_buttons_a_reader_does_not(client, bob, dora, scene):
    login(client, bob)
    html = client.get(reverse("console:node-panel", args=[scene[0].pk])).content.decode()
    assert "audit-btn" in html and "upload-btn" in html
    login(client, dora)
    html = client.get(reverse("console:node-panel", args=[scene[0].pk])).content.decode()
    assert "audit-btn" not in html and "upload-btn" not in html


def test_the_audit_button_runs_the_audit_and_reports_drift(client, bob, dora, scene, monkeypatch):
    from provisioning.core import audit

    class Report:
        drifted = [{"component": "BIOS", "matched": False}]
        unreadable: dict = {}
        inventory = [{"kind": "nic", "slot": "NIC 0"}, {"kind": "bmc", "slot": "BMC"}]
        inventory_drift = [{"part": "NIC 0", "stored": {"firmware_version": "1"}}]

        def as_dict(self):
            return {"matched": 5, "drifted": 1, "manifest": "hgx-h100-8gpu 1.0.0"}

    calls = []
    monkeypatch.setattr(
        audit, "audit_node", lambda node, actor=None: calls.append(actor) or Report()
    )
    node = scene[0]
    login(client, dora)
    assert client.post(reverse("console:node-audit", args=[node.pk])).status_code == 403
    login(client, bob)
    response = client.post(reverse("console:node-audit", args=[node.pk]), follow=True)
    assert b"5 matched, 1 drifted (BIOS) against hgx-h100-8gpu 1.0.0" in response.content
    assert b"stored inventory differs from the observation on 1 part(s)." in response.content
    assert calls == [bob]
