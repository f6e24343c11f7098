"""Publishing a manifest in Debian's chromium: the preview names the nodes it puts behind, the
rack marks them once it is published, and a rollout with concurrency 1 brings them forward, its
progress on its own page. Screenshots are left under the test's tmp dir."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from fleet.choices import DocumentStatus, NodeState
from fleet.models import Manifest
from provisioning.choices import RolloutState
from provisioning.models import Rollout
from tests import factories
from tests.support import scenes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
S = NodeState
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause


def _scene():
    rack = factories.make_rack("R05")
    factories.make_profile()
    nodes = scenes.build_rack(rack, {S.IN_SERVICE: 1, S.FAILED: 2, S.ENROLLED: 1})
    draft = scenes.manifest().clone_as_draft()
    return rack, nodes, draft


def test_publish_preview_behind_marks_and_a_rollout(open_as, server, db_thread, alice, tmp_path):
    rack, (in_service, failed_1, failed_2, enrolled), draft = db_thread(_scene)
    behind = [in_service, failed_1, failed_2]
    change = f"/admin/fleet/manifest/{draft.pk}/change/"

    page = open_as(alice, change)
    page.click("#publish-btn")
    preview = page.locator("#publish-preview")
    expect(preview).to_contain_text(
        "Publish hgx-h100-8gpu 1.0.1 in place of 1.0.0", timeout=TIMEOUT
    )
    expect(preview.locator(".behind-count")).to_have_text("Publishing 1.0.1 puts 3 nodes behind:")
    for node in behind:
        expect(preview.locator(f'.behind-node[data-node="{node.pk}"]')).to_contain_text(node.serial)
    expect(preview.locator(f'.behind-node[data-node="{enrolled.pk}"]')).to_have_count(0)
    expect(preview).to_contain_text("hall-1/R05")
    page.screenshot(path=tmp_path / "publish-preview.png", full_page=True)
    assert db_thread(lambda: Manifest.objects.get(pk=draft.pk).status) == DocumentStatus.DRAFT

    page.click("#publish-confirm")
    expect(page.locator(".messagelist")).to_contain_text("Published hgx-h100-8gpu 1.0.1")
    expect(page.locator("#rollout-box .behind-count")).to_have_text("There are 3 nodes behind:")
    page.screenshot(path=tmp_path / "published.png", full_page=True)
    assert db_thread(lambda: Manifest.objects.get(pk=draft.pk).status) == DocumentStatus.PUBLISHED

    page.goto(f"{server.url}/racks/{rack.pk}/")
    for node in behind:
        expect(page.locator(f"#slot-{node.pk} .behind-mark")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator(f"#slot-{enrolled.pk} .behind-mark")).to_have_count(0)
    expect(page.locator(".behind-summary")).to_contain_text("3 nodes behind the published manifest")
    page.click(f"#slot-{failed_1.pk}")
    expect(page.locator(f"#behind-{failed_1.pk}")).to_have_text(
        "Manifest 1.0.0; 1.0.1 is published", timeout=TIMEOUT
    )
    page.screenshot(path=tmp_path / "rack-behind.png", full_page=True)

    page.goto(server.url + change)
    page.fill("#rollout-concurrency", "1")
    page.click("#rollout-start")
    counts = page.locator("#rollout-counts")
    expect(counts).to_contain_text("0 of 3 done", timeout=TIMEOUT)
    expect(counts).to_contain_text("1 in flight (at most 1)")
    expect(counts).to_contain_text("2 waiting")
    expect(page.locator(".rollout-node")).to_have_count(3)
    expect(page.locator(f'#rollout-node-{in_service.pk}[data-status="running"]')).to_contain_text(
        "Upgrade to a new manifest"
    )
    page.screenshot(path=tmp_path / "rollout.png", full_page=True)

    page.click("#rollout-pause")
    expect(page.locator("#rollout-state")).to_have_text("Paused", timeout=TIMEOUT)
    expect(page.locator("#rollout-resume")).to_be_visible()
    page.click("#rollout-cancel")
    expect(page.locator("#rollout-state")).to_have_text("Cancelled", timeout=TIMEOUT)
    page.screenshot(path=tmp_path / "rollout-cancelled.png", full_page=True)
    assert db_thread(lambda: Rollout.objects.get().state) == RolloutState.CANCELLED
