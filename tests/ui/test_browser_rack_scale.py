"""A rack-scale rack in Debian's chromium against a real daphne (issue 34): the page shows every
member (compute trays, NVLink switch trays, power shelves) at its height with its kind, the
rack's state and its fabric verdict; one click approves the rack, every member enters service,
and a second open browser sees it live; a failed fabric names the tray and GPU and leaves the
button disabled."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from fleet.choices import NodeState, RackState
from fleet.models import Node, RackSystem, SkuMember
from tests.support import rack_scenes

from .conftest import SCREENSHOTS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause
LABELS = {
    "power_shelf": "Power shelf",
    "switch_tray": "NVLink switch tray",
    "compute_tray": "Compute tray",
}


def slot(page, node_id: int):
    return page.locator(f"#slot-{node_id}")


def test_the_rack_shows_its_members_and_verdict_and_is_approved_in_one_click(
    open_as, db_thread, bob, alice
):
    system, members = db_thread(rack_scenes.awaiting_nvl72)
    url = f"/racks/{system.rack_id}/"
    watcher = open_as(alice, url)
    expect(watcher.locator("#live-status")).to_have_attribute("data-state", "open", timeout=TIMEOUT)
    watcher.evaluate("window.__sameDocument = true")
    page = open_as(bob, url)

    # Every member is drawn, with its kind and number, at its own U.
    expect(page.locator(".slot .member")).to_have_count(35)
    for kind, nodes in members.items():
        for node in nodes:
            member = slot(page, node.pk).locator(".member")
            expect(member).to_have_text(f"{LABELS[kind]} {node.member_index}")
            expect(member).to_have_attribute("data-kind", kind)
            expect(page.locator(f'.unit[data-u="{node.position}"] #slot-{node.pk}')).to_be_visible()
    expect(page.locator("#rack-state")).to_have_attribute("data-state", "awaiting_approval")
    verdict = page.locator("#fabric-verdict")
    expect(verdict).to_have_attribute("data-verdict", "pass")
    expect(verdict).to_contain_text("NVLink fabric passed")
    expect(verdict).to_contain_text("72 GPUs of 18 compute trays in one clique")
    expect(page.locator("#nvlink-domain")).to_have_text("NVL01-nvl72")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "rack-scale-nvl72.png", full_page=True)

    # One click: no dialog, no second button.
    page.click("#approve-rack-btn")
    expect(page.locator(".msg.success")).to_contain_text(
        "Rack NVL01: approved into service, 35 members with it."
    )
    expect(page.locator("#rack-state")).to_have_attribute("data-state", "in_service")
    for nodes in members.values():
        for node in nodes:
            expect(slot(page, node.pk)).to_have_attribute("data-state", "in_service")
    expect(page.locator("#approve-rack-btn")).to_be_disabled()

    # The other browser follows without a reload: every member and the rack itself.
    expect(watcher.locator("#rack-state")).to_have_attribute(
        "data-state", "in_service", timeout=TIMEOUT
    )
    for nodes in members.values():
        for node in nodes:
            expect(slot(watcher, node.pk)).to_have_attribute(
                "data-state", "in_service", timeout=TIMEOUT
            )
    assert watcher.evaluate("window.__sameDocument") is True

    def stored():
        rack_state = RackSystem.objects.get(pk=system.pk).state
        nodes = set(Node.objects.filter(rack_id=system.rack_id).values_list("state", flat=True))
        return rack_state, nodes

    assert db_thread(stored) == (RackState.IN_SERVICE, {NodeState.IN_SERVICE})


def test_a_failed_fabric_names_the_tray_and_gpu_and_the_rack_cannot_be_approved(
    open_as, db_thread, bob
):
    system, _ = db_thread(rack_scenes.awaiting_nvl72, fabric="fail")
    page = open_as(bob, f"/racks/{system.rack_id}/")
    verdict = page.locator("#fabric-verdict")
    expect(verdict).to_have_attribute("data-verdict", "fail")
    expect(verdict.locator(".fabric-findings li").first).to_contain_text(
        "tray c04 (serial 1820025180003) GPU 2"
    )
    expect(verdict).to_contain_text("in clique 4027")
    expect(page.locator("#approve-rack-btn")).to_be_disabled()
    expect(page.locator("#approve-rack-blockers")).to_contain_text(
        "its NVLink fabric verdict is failed"
    )


def test_a_taller_member_is_drawn_at_its_height(open_as, db_thread, bob):
    def scene():
        system, members = rack_scenes.awaiting_nvl72(fabric="running")
        SkuMember.objects.filter(sku=system.sku, kind="power_shelf").update(height_u=2)
        system.rack.height_u = 52
        system.rack.save(update_fields=["height_u"])
        for i, shelf in enumerate(members["power_shelf"]):
            Node.objects.filter(pk=shelf.pk).update(position=36 + 2 * i)
        return system, members

    system, members = db_thread(scene)
    page = open_as(bob, f"/racks/{system.rack_id}/")
    expect(page.locator("#fabric-verdict")).to_have_attribute("data-verdict", "unknown")
    shelf = slot(page, members["power_shelf"][0].pk).bounding_box()
    tray = slot(page, members["compute_tray"][0].pk).bounding_box()
    # Two units and the gap between them: about twice a 1U tray, never the same.
    assert 1.8 * tray["height"] <= shelf["height"] <= 2.3 * tray["height"], (shelf, tray)
    expect(page.locator('.unit[data-u="36"] .u')).to_have_text("U36–37")
