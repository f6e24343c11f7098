"""The fleet firmware view in Debian's chromium (issue 36): versions per part model, the one each
manifest wants, the nodes behind by serial, filtered by site, and the CSV of what is shown."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from fleet.choices import NodeState
from tests import factories
from tests.console.test_firmware_view import WANTED, add_parts
from tests.support import scenes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause


def _scene():
    manifest = scenes.manifest()
    one = factories.make_rack("R01", site="hall-1")
    two = factories.make_rack("R02", site="hall-2")
    behind = factories.make_node("FW-OLD", rack=one, manifest=manifest)
    on_target = factories.make_node("FW-OK", rack=two, manifest=manifest)
    for node in (behind, on_target):
        scenes.walk(node, NodeState.IN_SERVICE)
    add_parts(behind, "7.10.20.00")
    add_parts(on_target, WANTED["bmc"])


def test_the_firmware_view_names_who_is_behind_and_filters_by_site(
    open_as, server, db_thread, alice, tmp_path
):
    db_thread(_scene)
    page = open_as(alice, "/firmware/")
    expect(page.locator("h1")).to_have_text("Firmware across the fleet", timeout=TIMEOUT)
    expect(page.locator("p.muted").first).to_contain_text("1 node behind")
    old = page.locator("table.firmware tr", has_text="7.10.20.00")
    expect(old).to_contain_text("1 behind")
    expect(old).to_contain_text("FW-OLD")
    running = page.locator("td:nth-child(2)", has_text="7.10.30.00")
    expect(page.locator("table.firmware tr", has=running)).to_contain_text("on target")
    page.screenshot(path=tmp_path / "firmware.png", full_page=True)

    page.select_option("select[name=site]", label="hall-2")
    page.click("form.filters button[type=submit]")
    expect(page.locator("p.muted").first).to_contain_text("0 nodes behind", timeout=TIMEOUT)
    expect(page.locator("table.firmware")).not_to_contain_text("FW-OLD")
    csv = page.locator("form.filters a", has_text="CSV")
    assert "site=" in (csv.get_attribute("href") or "")
    page.screenshot(path=tmp_path / "firmware-hall-2.png", full_page=True)
