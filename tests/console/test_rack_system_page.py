"""The rack page of a rack-scale system without a browser (issue 34): every member drawn at its
declared height and position with its kind and number, the rack's state and its NVLink fabric
status ("unknown" without an observation, never passed), the one-click approval through the
form, who may press it, and the snapshot carrying the same fragment."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from acceptance.models import Decision
from fleet.choices import NodeState, RackState
from fleet.models import Node, RackSystem, SkuMember
from tests.support import rack_scenes

pytestmark = pytest.mark.django_db


def page(client, user, system) -> str:
    client.force_login(user)
    response = client.get(reverse("console:rack", args=[system.rack_id]))
    assert response.status_code == 200
    return response.content.decode()


def unit(html: str, u: int) -> str:
    """The <li> of the elevation row whose lowest U is `u`."""
    found = re.search(rf'<li class="unit[^"]*" data-u="{u}"[^>]*>.*?</li>', html, re.S)
    assert found, f"no row at U{u}"
    return found.group(0)


def test_every_member_is_drawn_at_its_height_and_position_with_its_kind(client, bob):
    system, members = rack_scenes.awaiting_nvl72()
    # Shelves declared 2U and racked above the trays, two units each.
    SkuMember.objects.filter(sku=system.sku, kind="power_shelf").update(height_u=2)
    system.rack.height_u = 52
    system.rack.save(update_fields=["height_u"])
    for i, shelf in enumerate(members["power_shelf"]):
        Node.objects.filter(pk=shelf.pk).update(position=36 + 2 * i)
    html = page(client, bob, system)

    shelf = unit(html, 36)
    assert 'data-span="2"' in shelf and "U36–37" in shelf
    assert 'data-kind="power_shelf" data-member="1">Power shelf 1</span>' in shelf
    assert 'data-u="37"' not in html  # the unit the shelf covers is not drawn again as empty
    assert "U50–51" in unit(html, 50) and 'data-u="52"' in html  # U52 stays free
    for kind, label in (("compute_tray", "Compute tray"), ("switch_tray", "NVLink switch tray")):
        for node in members[kind]:
            row = unit(html, node.position)
            assert "span" not in row.split(">")[0]  # 1U: no span
            assert f'id="slot-{node.pk}"' in row
            assert f">{label} {node.member_index}</span> {node.serial}" in row
    assert html.count('class="member"') == 35


def test_the_rack_shows_its_state_domain_and_fabric_verdict_and_approves_in_one_form(client, bob):
    system, members = rack_scenes.awaiting_nvl72()
    html = page(client, bob, system)
    assert 'id="rack-state" data-state="awaiting_approval"' in html
    assert '<b id="nvlink-domain">NVL01-nvl72</b>' in html
    assert 'id="fabric-verdict" data-verdict="pass"' in html
    assert "NVLink fabric passed" in html and "72 GPUs of 18 compute trays in one clique" in html
    assert re.search(r'id="approve-rack-btn">✓ Approve rack NVL01 \(35 members\)', html)
    assert "approve-all-btn" not in html  # never node by node
    assert 'id="approve-btn"' not in page_of_member(client, members["compute_tray"][0])

    response = client.post(reverse("console:rack-system-approve", args=[system.rack_id]))
    assert response.status_code == 302
    assert RackSystem.objects.get(pk=system.pk).state == RackState.IN_SERVICE
    assert set(Node.objects.filter(rack=system.rack).values_list("state", flat=True)) == {
        NodeState.IN_SERVICE
    }
    after = client.get(response["Location"]).content.decode()
    assert "Rack NVL01: approved into service, 35 members with it." in after
    assert 'id="rack-state" data-state="in_service"' in after


def page_of_member(client, node) -> str:
    url = reverse("console:rack", args=[node.rack_id])
    return client.get(url, {"node": node.pk}).content.decode()


def test_an_unobserved_fabric_reads_unknown_and_the_approval_is_refused(client, bob):
    system, _ = rack_scenes.awaiting_nvl72(fabric="running")
    html = page(client, bob, system)
    assert 'id="fabric-verdict" data-verdict="unknown"' in html
    assert "NVLink fabric unknown" in html and "NVLink fabric passed" not in html
    assert re.search(r'id="approve-rack-btn" disabled>', html)
    assert "Not approvable yet: its NVLink fabric verdict is unknown" in html

    # The button is disabled; a POST made anyway is refused by the same rule.
    response = client.post(reverse("console:rack-system-approve", args=[system.rack_id]))
    after = client.get(response["Location"]).content.decode()
    assert "cannot be approved: its NVLink fabric verdict is unknown" in after
    assert RackSystem.objects.get(pk=system.pk).state == RackState.AWAITING_APPROVAL
    assert not Decision.objects.exists()


@pytest.mark.parametrize(("who", "status"), [("dora", 403), ("charlie", 403)])
def test_who_may_not_approve_sees_no_button_and_is_refused(client, request, who, status):
    user = request.getfixturevalue(who)
    system, _ = rack_scenes.awaiting_nvl72()
    client.force_login(user)
    html = client.get(reverse("console:rack", args=[system.rack_id])).content.decode()
    assert "approve-rack-btn" not in html
    response = client.post(reverse("console:rack-system-approve", args=[system.rack_id]))
    assert response.status_code == status
    assert RackSystem.objects.get(pk=system.pk).state == RackState.AWAITING_APPROVAL


def test_a_tray_quarantined_from_its_panel_degrades_the_rack(client, bob):
    system, members = rack_scenes.awaiting_nvl72()
    tray = members["compute_tray"][4]
    client.force_login(bob)
    client.post(reverse("console:node-quarantine", args=[tray.pk]), {"reason": "GPU 1 clique"})
    tray.refresh_from_db()
    assert tray.state == NodeState.QUARANTINED
    assert RackSystem.objects.get(pk=system.pk).state == RackState.DEGRADED


def test_the_snapshot_carries_the_rack_fragment(client, bob):
    system, _ = rack_scenes.awaiting_nvl72(fabric="fail")
    client.force_login(bob)
    data = client.get(reverse("console:rack-snapshot", args=[system.rack_id])).json()
    assert 'data-verdict="fail"' in data["system"]
    assert re.search(r"<li>tray c04 \(serial \d+\) GPU 2 .*: in clique 4027", data["system"])
    assert len(data["slots"]) == 35 and 'class="member"' in next(iter(data["slots"].values()))
