"""Risky actions preview what they will do, in Debian's chromium: bulk approval shows its count
(and cannot be pressed at 0), and a wipe names the nodes and the tenant before it is filed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from fleet.choices import NodeState
from fleet.models import Node
from provisioning.models import WipeRequest
from tests import factories
from tests.support import scenes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause


def test_bulk_approve_counts_and_a_wipe_asks_first(open_as, server, db_thread, alice, tmp_path):
    def scene():
        rack = factories.make_rack("R11")
        return rack, scenes.build_rack(rack, {NodeState.AWAITING_APPROVAL: 2})

    rack, nodes = db_thread(scene)
    page = open_as(alice, f"/racks/{rack.pk}/")
    button = page.locator("#approve-all-btn")
    expect(button).to_have_text("Approve 2 passed nodes")
    expect(button).to_be_enabled()
    button.click()
    page.click("#approve-all-confirm")
    expect(page.locator(".messages")).to_contain_text("Approved 2 node(s)", timeout=TIMEOUT)
    expect(page.locator("#approve-all-btn")).to_have_text("Approve 0 passed nodes")
    expect(page.locator("#approve-all-btn")).to_be_disabled()
    page.screenshot(path=tmp_path / "approved.png", full_page=True)

    db_thread(
        lambda: Node.objects.filter(pk=nodes[0].pk).update(tenant="acme", allocation_ref="acme-7")
    )
    page.goto(f"{server.url}/wipes/")
    page.fill("#id_tenant", "acme")
    page.fill("#id_allocation_ref", "acme-7")
    page.fill("#id_nodes", nodes[0].serial)
    page.click(".wipe-form button[type=submit]")
    expect(page.locator("h2")).to_have_text("Erase 1 node of tenant acme?", timeout=TIMEOUT)
    expect(page.locator("#wipe-confirm-nodes")).to_contain_text(nodes[0].serial)
    page.screenshot(path=tmp_path / "wipe-confirm.png", full_page=True)
    assert db_thread(WipeRequest.objects.count) == 0, "filed before it was confirmed"
    page.click("#wipe-confirm")
    expect(page.locator(".messages")).to_contain_text("Filed wipe request", timeout=TIMEOUT)
    assert db_thread(lambda: Node.objects.get(pk=nodes[0].pk).state) == NodeState.RELEASING
