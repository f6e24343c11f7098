"""Every lifecycle move as a button in Debian's chromium: a failed, a quarantined and an enrolled
node each say what happened, offer the next step, and the buttons (and their reason dialogs)
move them. Screenshots are left under the test's tmp dir."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from fleet.choices import NodeState
from fleet.models import Node
from provisioning.choices import PhaseStatus, RunStatus
from provisioning.models import Run
from tests import factories
from tests.support import scenes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
S = NodeState
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause


def _scene():
    rack = factories.make_rack("R09")
    factories.make_profile()
    failed, retried, quarantined, enrolled = scenes.build_rack(
        rack, {S.FAILED: 2, S.QUARANTINED: 1, S.ENROLLED: 1}
    )
    Run.objects.filter(node__in=[failed, retried]).update(
        last_error="nvme_firmware: NVMe 3: status 0x4106"
    )
    return rack, failed, retried, quarantined, enrolled


def _state(node_id: int) -> str:
    return Node.objects.get(pk=node_id).state


def test_each_move_is_a_button_that_says_why_and_what_next(
    open_as, server, db_thread, alice, tmp_path
):
    rack, failed, retried, quarantined, enrolled = db_thread(_scene)

    def panel(node, name: str):
        page.goto(f"{server.url}/racks/{rack.pk}/?node={node.pk}")
        expect(page.locator(f"#node-panel-{node.pk}")).to_be_visible(timeout=TIMEOUT)
        page.screenshot(path=tmp_path / f"{name}.png", full_page=True)

    def with_reason(move: str, reason: str):
        page.click(f"#move-{move}-btn")
        page.fill(f"#move-{move}-reason-{node.pk}", reason)
        page.click(f"#move-{move}-confirm")

    def said(text: str):
        expect(page.locator(".messages")).to_contain_text(text, timeout=TIMEOUT)

    page = open_as(alice, f"/racks/{rack.pk}/?node={failed.pk}")
    node = failed
    panel(node, "failed")
    expect(page.locator(".situation")).to_contain_text(
        f"Run {node.runs.get().pk} failed: nvme_firmware: NVMe 3: status 0x4106."
    )
    expect(page.locator(".next-step")).to_contain_text("Retry from the failed phase")
    # Skip the failed phase: a fleet admin's move, with the phase chosen and a reason.
    page.click("#move-skip-btn")
    expect(page.locator(f"#move-skip-phase-{node.pk}")).to_have_value("nvme_firmware")
    page.fill(f"#move-skip-reason-{node.pk}", "drive firmware is flashed by the vendor on site")
    page.screenshot(path=tmp_path / "skip-dialog.png")
    page.click("#move-skip-confirm")
    said("nvme_firmware skipped")
    assert db_thread(_state, node.pk) == S.PROVISIONING
    with_reason("abort", "rack move tonight")
    said("aborted")
    assert db_thread(_state, node.pk) == S.FAILED
    page.click("#move-reprovision-btn")
    said("re-provision run")
    with_reason("abort", "not before the rack move")
    with_reason("decommission", "board replaced by a new chassis")
    said("decommissioned")
    assert db_thread(_state, node.pk) == S.DECOMMISSIONED
    panel(node, "decommissioned")

    node = retried
    panel(node, "retry")
    page.click("#move-retry-btn")
    said("resumes at the phase that failed")
    run = db_thread(lambda: Run.objects.get(node_id=retried.pk))
    assert run.status == RunStatus.QUEUED
    assert db_thread(lambda: run.phases.get(phase="nvme_firmware").status) == PhaseStatus.PENDING

    node = quarantined
    panel(node, "quarantined")
    expect(page.locator(".situation")).to_contain_text("Quarantined: A gate found a hardware fault")
    expect(page.locator(".next-step")).to_contain_text("Send it to break/fix")
    with_reason("break-fix", "GPU 3 swapped by Sam")
    said("sent to break/fix")
    expect(page.locator(".situation")).to_contain_text("In break/fix since")
    page.click("#move-revalidate-btn")
    said("re-validate run")
    assert db_thread(_state, node.pk) == S.PROVISIONING

    node = enrolled
    panel(node, "enrolled")
    expect(page.locator(".next-step")).to_contain_text("Start a run")
    page.click("#move-start-btn")
    said("provision run")
    assert db_thread(_state, node.pk) == S.PROVISIONING
    panel(node, "started")


def _in_service_scene():
    rack = factories.make_rack("R10")
    factories.make_profile()
    return rack, *scenes.build_rack(rack, {S.IN_SERVICE: 2})


def test_day_two_buttons_report_a_node_suspect_and_burn_one_in(
    open_as, server, db_thread, alice, tmp_path
):
    rack, suspect, spare = db_thread(_in_service_scene)
    page = open_as(alice, f"/racks/{rack.pk}/?node={suspect.pk}")
    expect(page.locator(f"#node-panel-{suspect.pk}")).to_be_visible(timeout=TIMEOUT)
    page.click("#move-suspect-btn")
    page.fill(f"#move-suspect-reason-{suspect.pk}", "Slurm health check: GPU 2 fell off the bus")
    page.screenshot(path=tmp_path / "suspect-dialog.png")
    page.click("#move-suspect-confirm")
    expect(page.locator(".messages")).to_contain_text("suspect run", timeout=TIMEOUT)
    run = db_thread(lambda: Run.objects.filter(node_id=suspect.pk).latest("pk"))
    assert run.kind == "suspect"
    assert db_thread(_state, suspect.pk) == S.RELEASING

    page.goto(f"{server.url}/racks/{rack.pk}/?node={spare.pk}")
    expect(page.locator(f"#node-panel-{spare.pk}")).to_be_visible(timeout=TIMEOUT)
    page.click("#move-burn-in-btn")
    expect(page.locator(".messages")).to_contain_text("burn-in run", timeout=TIMEOUT)
    page.screenshot(path=tmp_path / "burn-in.png", full_page=True)
    run = db_thread(lambda: Run.objects.filter(node_id=spare.pk).latest("pk"))
    assert run.kind == "burn_in"
    assert db_thread(_state, spare.pk) == S.RELEASING
