"""The live board in Debian's chromium against a real daphne: racks go green without a reload,
decisions show in every open browser, refusals hold, and a dropped socket re-syncs."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from acceptance import decisions
from acceptance.models import Decision
from fleet.choices import EventKind, NodeState
from fleet.events import record
from fleet.models import Node
from provisioning.choices import RunStatus
from provisioning.core.phases import PHASES
from provisioning.models import PhaseRecord
from tests import factories
from tests.support import scenes

from .conftest import SCREENSHOTS, wait_until_true

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
S = NodeState
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause


def slot(page, node_id: int):
    return page.locator(f"#slot-{node_id}")


def advance(node_id: int, phases_done: int) -> None:
    """Mark the node's first phases done (as the engine would) and say so in an event."""
    node = Node.objects.get(pk=node_id)
    run = node.runs.filter(status=RunStatus.RUNNING).first() or scenes.make_run(node, phases_done=0)
    PhaseRecord.objects.filter(run=run, order__lt=phases_done).update(status="done")
    have = set(run.phases.values_list("phase", flat=True))
    PhaseRecord.objects.bulk_create(
        PhaseRecord(run=run, phase=p.name, order=i, status="done")
        for i, p in enumerate(PHASES[:phases_done])
        if p.name not in have
    )
    run.current_phase = PHASES[min(phases_done, len(PHASES) - 1)].name
    run.save(update_fields=["current_phase"])
    record(node, EventKind.PHASE_DONE, message=f"{phases_done} phases done")


def finish_gates(node_id: int) -> None:
    node = Node.objects.get(pk=node_id)
    run = node.runs.filter(status=RunStatus.RUNNING).first()
    run.status = RunStatus.SUCCEEDED
    run.save(update_fields=["status"])
    scenes.pass_gates(run)


@pytest.mark.parametrize("driver", ["direct", "celery"], indirect=True)
def test_the_open_rack_page_turns_nodes_green_without_a_reload(
    open_as, db_thread, driver, bob, manifest
):
    rack = db_thread(factories.make_rack, "R07")
    nodes = [db_thread(factories.make_node, rack=rack, position=u) for u in (1, 2, 3, 4)]
    page = open_as(bob, f"/racks/{rack.pk}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open", timeout=TIMEOUT)
    page.evaluate("window.__sameDocument = true")

    for node in nodes:
        driver.move(node.pk, S.PROVISIONING)
    for node in nodes:
        expect(slot(page, node.pk)).to_have_attribute("data-state", "provisioning", timeout=TIMEOUT)
    db_thread(advance, nodes[0].pk, 9)
    bar = slot(page, nodes[0].pk).locator("[role=progressbar]")
    expect(bar).to_have_attribute("aria-valuenow", "60", timeout=TIMEOUT)  # 9 of 15 phases
    expect(slot(page, nodes[0].pk)).to_contain_text("DPU firmware")  # the tenth phase is next

    for node in nodes:
        db_thread(advance, node.pk, len(PHASES))
        driver.move(node.pk, S.AWAITING_APPROVAL)
        db_thread(finish_gates, node.pk)
    db_thread(lambda: decisions.approve_all_passed(rack, bob))

    for node in nodes:
        expect(slot(page, node.pk)).to_have_attribute("data-state", "in_service", timeout=TIMEOUT)
        expect(slot(page, node.pk)).to_have_class(re.compile(r"\bc-green\b"))
        expect(slot(page, node.pk).locator(".ico")).to_have_text("✓")
    expect(page.locator("#rack-summary")).to_contain_text("100% in service")
    assert page.evaluate("window.__sameDocument") is True  # no reload happened


def test_an_approval_in_one_browser_shows_in_another_and_in_the_database(
    browser, server, open_as, db_thread, bob, alice, manifest
):
    rack = db_thread(factories.make_rack, "R08")
    nodes = db_thread(scenes.build_rack, rack, {S.AWAITING_APPROVAL: 2, S.IN_SERVICE: 1})
    waiting = nodes[0]
    watcher = open_as(alice, f"/racks/{rack.pk}/")
    expect(watcher.locator("#live-status")).to_have_attribute("data-state", "open", timeout=TIMEOUT)

    # Bob signs in through the login page, like a person.
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{server.url}/racks/{rack.pk}/?node={waiting.pk}")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", "bob")
    page.fill("#id_password", "pw-bob")
    page.click("button[type=submit]")
    expect(page.locator(f"#node-panel-{waiting.pk}")).to_be_visible()
    # caught up with the live feed
    wait_until_true(page, "window.greenlight && window.greenlight.syncs >= 1")

    page.click("#approve-btn")
    page.fill(f"#approve-reason-{waiting.pk}", "all gates green, cabling checked")
    page.click("#approve-confirm")
    expect(page.locator(".msg.success")).to_contain_text("approved")
    expect(slot(page, waiting.pk)).to_have_attribute("data-state", "in_service")

    expect(slot(watcher, waiting.pk)).to_have_attribute("data-state", "in_service", timeout=TIMEOUT)
    expect(watcher.locator("#rack-summary")).to_contain_text("67% in service")
    assert Node.objects.get(pk=waiting.pk).state == S.IN_SERVICE
    decision = Decision.objects.get(node_id=waiting.pk)
    assert (decision.actor_id, decision.reason) == (bob.pk, "all gates green, cabling checked")
    context.close()


@pytest.mark.parametrize("who", ["dora", "charlie"])
def test_a_user_without_the_permission_sees_no_buttons_and_a_forged_post_is_refused(
    who, request, open_as, db_thread, manifest
):
    user = request.getfixturevalue(who)
    rack = db_thread(factories.make_rack, "R09")
    waiting = db_thread(scenes.build_rack, rack, {S.AWAITING_APPROVAL: 1})[0]
    page = open_as(user, f"/racks/{rack.pk}/?node={waiting.pk}")
    if who == "dora":  # reads everything, decides nothing
        expect(page.locator(f"#node-panel-{waiting.pk}")).to_be_visible()
    expect(page.locator("#approve-btn")).to_have_count(0)
    expect(page.locator("#quarantine-btn")).to_have_count(0)
    expect(page.locator("#approve-all-btn")).to_have_count(0)

    # Forge the form post with the user's own session and a valid CSRF token.
    page.goto(page.url.split("/racks/")[0] + "/accounts/login/")  # a page that sets the cookie
    status = page.evaluate(
        """async (url) => {
            const token = document.querySelector('[name=csrfmiddlewaretoken]').value;
            const body = new URLSearchParams({csrfmiddlewaretoken: token, reason: 'forged'});
            const resp = await fetch(url, {method: 'POST', body, redirect: 'manual'});
            return resp.status;
        }""",
        f"/nodes/{waiting.pk}/approve/",
    )
    assert status == 403
    assert Node.objects.get(pk=waiting.pk).state == S.AWAITING_APPROVAL
    assert not Decision.objects.exists()


def test_a_dropped_socket_reconnects_and_the_page_matches_the_database(
    open_as, server, db_thread, driver, bob, manifest
):
    rack = db_thread(factories.make_rack, "R10")
    nodes = db_thread(scenes.build_rack, rack, {S.ENROLLED: 3, S.PROVISIONING: 2})
    page = open_as(bob, f"/racks/{rack.pk}/")
    status = page.locator("#live-status")
    expect(status).to_have_attribute("data-state", "open", timeout=TIMEOUT)
    # The first sync follows the socket's opening: stopping before it lands would race it.
    wait_until_true(page, "window.greenlight && window.greenlight.syncs >= 1")

    server.stop()  # the socket drops with the server
    expect(status).to_have_attribute("data-state", "retrying", timeout=TIMEOUT)
    driver.move(nodes[0].pk, S.PROVISIONING)  # published to nobody: the page must re-sync
    driver.move(nodes[1].pk, S.FAILED)
    driver.move(nodes[3].pk, S.FAILED)
    server.start()

    wait_until_true(
        page, "window.greenlight && window.greenlight.connects >= 2 && window.greenlight.syncs >= 2"
    )
    for node_id, state in Node.objects.filter(rack=rack).values_list("pk", "state"):
        expect(slot(page, node_id)).to_have_attribute("data-state", state, timeout=TIMEOUT)
    expect(status).to_have_attribute("data-state", "open")


def test_screenshots_of_the_overview_the_rack_and_a_failed_node(open_as, db_thread, bob, manifest):
    mix = {
        S.IN_SERVICE: 14,
        S.AWAITING_APPROVAL: 5,
        S.VALIDATING: 4,
        S.PROVISIONING: 9,
        S.FAILED: 1,
        S.QUARANTINED: 2,
        S.ENROLLED: 2,
    }
    racks = [db_thread(factories.make_rack, f"R{i:02d}", "hall-1") for i in range(1, 5)]
    built = db_thread(scenes.build_rack, racks[0], mix)
    db_thread(scenes.build_rack, racks[1], {S.IN_SERVICE: 37})
    db_thread(scenes.build_rack, racks[2], {S.PROVISIONING: 20, S.ENROLLED: 17})
    db_thread(scenes.build_rack, racks[3], {S.AWAITING_APPROVAL: 30, S.IN_SERVICE: 7})
    quarantined = next(n for n in built if n.state == S.QUARANTINED)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    page = open_as(bob, "/")
    expect(page.locator(".rack-row")).to_have_count(4)
    page.screenshot(path=SCREENSHOTS / "site-overview.png", full_page=True)

    page.goto(page.url + f"racks/{racks[0].pk}/")
    expect(page.locator(".slot")).to_have_count(37)
    page.screenshot(path=SCREENSHOTS / "rack-view.png", full_page=True)

    page.click(f"#slot-{quarantined.pk}")
    panel = page.locator(f"#node-panel-{quarantined.pk}")
    expect(panel).to_contain_text("GPU 3: XID 79")
    expect(panel.locator("svg.chart")).to_have_count(3)
    page.screenshot(path=SCREENSHOTS / "failed-node-panel.png", full_page=True)
