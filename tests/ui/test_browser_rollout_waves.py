"""A rollout in waves in Debian's chromium (issue 36): the manifest page starts it with a canary,
its page shows the waves, the canary's failure pauses it with the report naming the node, what
it flashed and the BMC's words, and "roll back" returns the node to the manifest before."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from fleet.choices import NodeState
from provisioning.day2.rollouts import advance_open_rollouts
from provisioning.models import Rollout
from tests import factories
from tests.provisioning.test_rollout_report import BMC_WORDS, _fails_after_flashing_the_bmc
from tests.support import scenes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause


def _scene():
    rack = factories.make_rack("R07")
    factories.make_profile()
    nodes = scenes.build_rack(rack, {NodeState.FAILED: 3})
    new = scenes.manifest().clone_as_draft()
    new.publish()
    return nodes, new


def _fail_the_canary() -> int:
    rollout = Rollout.objects.get()
    canary = rollout.entries.get(wave=0)
    _fails_after_flashing_the_bmc(canary.run)
    return canary.node_id


def test_a_canary_wave_pauses_the_rollout_and_its_report_rolls_back(
    open_as, server, db_thread, alice, tmp_path
):
    nodes, new = db_thread(_scene)
    page = open_as(alice, f"/admin/fleet/manifest/{new.pk}/change/")
    page.fill("#rollout-concurrency", "3")
    page.fill("#rollout-canary", "1")
    page.fill("#rollout-threshold", "0")
    page.click("#rollout-start")
    expect(page.locator("#rollout-policy")).to_contain_text("Waves: 1 canary node", timeout=TIMEOUT)
    expect(page.locator('.rollout-node[data-wave="0"][data-status="running"]')).to_have_count(1)
    expect(page.locator('.rollout-node[data-wave="1"][data-status="waiting"]')).to_have_count(2)
    page.screenshot(path=tmp_path / "wave-canary.png", full_page=True)

    canary = db_thread(_fail_the_canary)
    db_thread(advance_open_rollouts)
    page.reload()
    expect(page.locator("#rollout-state")).to_have_text("Paused", timeout=TIMEOUT)
    expect(page.locator(".rollout")).to_contain_text("wave 1 failed 1 of 1 nodes")
    row = page.locator(f"#report-node-{canary}")
    expect(row).to_contain_text("bmc: 1.10.2 → 1.12.0")
    expect(row).to_contain_text("bios_firmware")
    expect(row).to_contain_text(BMC_WORDS)
    page.screenshot(path=tmp_path / "wave-report.png", full_page=True)

    page.click("#rollout-roll-back")
    expect(page.locator(".rollout")).to_contain_text("rolls back nodes of", timeout=TIMEOUT)
    expect(page.locator(f'#rollout-node-{canary}[data-status="running"]')).to_have_count(1)
    page.screenshot(path=tmp_path / "roll-back.png", full_page=True)
    back = db_thread(lambda: Rollout.objects.filter(rollback_of__isnull=False).get())
    assert back.manifest.version == "1.0.0"
