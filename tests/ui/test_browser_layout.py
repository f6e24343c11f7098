"""The rack page at a phone's width and on wide screens, in Debian's chromium (issue 24).

At 390 px: one column, no horizontal scroll, no state name cut, the header wrapped, and a
selected node's panel before the rack. At 1366 and 1920 px: every phase label whole, and at
1920 the panel beside the rack. The legend and zoned event times show at every width.
Screenshots are left under the test's tmp dir.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from acceptance.gates import GateName
from fleet.choices import EventKind, NodeState
from fleet.models import Event
from provisioning.core.gates import step_name
from provisioning.models import Run
from tests import factories
from tests.support import scenes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
S = NodeState
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause
PHONE = {"width": 390, "height": 844}
WAITS = 12
ZONED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")

# Elements whose text must never be cut (an ellipsis or a clip shows as scrollWidth > clientWidth).
UNCUT = (
    ".topbar, .topbar > *, .slot .state, .badge, .legend, .page-head h1, .node-panel h2, .events"
)
CUT = """(sel) => Array.from(document.querySelectorAll(sel))
  .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
  .map((e) => e.className + ": " + e.textContent.trim().slice(0, 80))"""


def _scene():
    rack = factories.make_rack("R24")
    factories.make_profile()
    mix = {
        S.IN_SERVICE: 3,
        S.AWAITING_APPROVAL: 1,
        S.VALIDATING: 2,
        S.PROVISIONING: 3,
        S.QUARANTINED: 1,
        S.FAILED: 1,
        S.ENROLLED: 1,
    }
    nodes = scenes.build_rack(rack, mix)
    scenes.awaiting_node(rack, passed=False, position=len(nodes) + 1)
    # The longest labels the slots show: a run in its longest phases, a node in its soak.
    provisioning = [n for n in nodes if n.state == S.PROVISIONING]
    for node, phase in zip(
        provisioning, ("os_install", "boot_ephemeral", "preflight"), strict=True
    ):
        Run.objects.filter(node=node).update(current_phase=phase)
    validating = [n for n in nodes if n.state == S.VALIDATING]
    for node, gate in zip(validating, (GateName.NVBANDWIDTH, GateName.BURN_IN), strict=True):
        Run.objects.filter(node=node).update(current_phase=step_name(gate))
    # A long wait: the same event again and again, which the panel folds into one line.
    selected = provisioning[0]
    start = timezone.now() - timedelta(minutes=WAITS + 1)
    for minute in range(WAITS):
        Event.objects.create(
            node=selected,
            rack=rack,
            kind=EventKind.PHASE_WAITING,
            message="os_install: image 61% written",
            created_at=start + timedelta(minutes=minute),
        )
    return rack, selected


def _no_horizontal_scroll(page, width: int) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"the page scrolls sideways: {scroll} px wide in a {width} px window"


def _nothing_cut(page) -> None:
    assert page.evaluate(CUT, UNCUT) == []


def _box(page, selector: str) -> dict:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not shown"
    return box


def test_a_phone_gets_one_column_with_the_panel_first(open_as, server, db_thread, bob, tmp_path):
    rack, selected = db_thread(_scene)
    page = open_as(bob, f"/racks/{rack.pk}/")
    page.set_viewport_size(PHONE)
    page.reload()
    expect(page.locator(f"#slot-{selected.pk}")).to_be_visible(timeout=TIMEOUT)

    # Nothing selected: the rack first, the page no wider than the phone, no state name cut.
    assert _box(page, ".elevation")["y"] < _box(page, ".side")["y"]
    _no_horizontal_scroll(page, PHONE["width"])
    _nothing_cut(page)
    for right in page.evaluate(
        "Array.from(document.querySelectorAll('.topbar > *')).map((e) => e.getBoundingClientRect().right)"
    ):
        assert right <= PHONE["width"], "the header runs off the screen"
    expect(page.locator("#legend")).to_be_visible()
    expect(page.locator("#legend [data-state=quarantined]")).to_contain_text("Quarantined")
    expect(page.locator("#legend [data-state=validating]")).to_contain_text("Validating")
    page.screenshot(path=tmp_path / "phone-rack.png", full_page=True)

    # A tap on a slot opens its panel above the rack (live.js), scrolled into view.
    page.locator(f"#slot-{selected.pk}").click()
    expect(page.locator(f"#node-panel-{selected.pk}")).to_be_visible(timeout=TIMEOUT)
    assert _box(page, f"#node-panel-{selected.pk}")["y"] < _box(page, ".elevation")["y"]
    _no_horizontal_scroll(page, PHONE["width"])

    # The same from the address (?node=): the panel before the slots, its times zoned.
    page.goto(f"{server.url}/racks/{rack.pk}/?node={selected.pk}")
    panel = page.locator(f"#node-panel-{selected.pk}")
    expect(panel).to_be_visible(timeout=TIMEOUT)
    assert _box(page, f"#node-panel-{selected.pk}")["y"] < _box(page, ".elevation")["y"]
    _no_horizontal_scroll(page, PHONE["width"])
    _nothing_cut(page)
    folded = panel.locator(f"#events-{selected.pk} li[data-count='{WAITS}']")
    expect(folded).to_have_count(1)
    expect(folded).to_contain_text(f"×{WAITS}, last ")
    times = panel.locator(f"#events-{selected.pk} time")
    expect(times.first).to_be_visible()
    for text in times.all_inner_texts():
        assert ZONED.match(text), text
    assert ZONED.match(times.first.get_attribute("title") or "")
    page.screenshot(path=tmp_path / "phone-panel.png", full_page=True)

    page.goto(f"{server.url}/")
    expect(page.locator("#legend")).to_be_visible(timeout=TIMEOUT)
    _no_horizontal_scroll(page, PHONE["width"])
    _nothing_cut(page)
    page.screenshot(path=tmp_path / "phone-overview.png", full_page=True)


@pytest.mark.parametrize("width,height", [(1366, 768), (1920, 1080)])
def test_wide_screens_show_whole_phase_labels_and_the_panel_beside_the_rack(
    open_as, server, db_thread, bob, tmp_path, width, height
):
    rack, selected = db_thread(_scene)
    page = open_as(bob, f"/racks/{rack.pk}/?node={selected.pk}")
    page.set_viewport_size({"width": width, "height": height})
    page.reload()
    expect(page.locator(f"#node-panel-{selected.pk}")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator(f"#slot-{selected.pk} .phase")).to_have_text(
        "OS install (sha256 + signature)"
    )
    assert page.locator(".slot .phase").count() >= 4
    _nothing_cut(page)  # every slot's state and phase label whole
    _no_horizontal_scroll(page, width)
    expect(page.locator("#legend")).to_be_visible()

    rack_box, side_box = _box(page, ".elevation"), _box(page, ".side")
    panel_box = _box(page, f"#node-panel-{selected.pk}")
    # Side by side: the panel starts right of the rack, level with its top.
    assert panel_box["x"] >= rack_box["x"] + rack_box["width"]
    assert abs(side_box["y"] - rack_box["y"]) < 2
    if width == 1920:
        # The width is used: the rack and the panel reach across the screen.
        assert side_box["x"] + side_box["width"] >= width - 60
        assert rack_box["width"] >= 680
    page.screenshot(path=tmp_path / f"rack-{width}.png", full_page=True)
