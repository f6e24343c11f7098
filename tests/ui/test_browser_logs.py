"""A phase's relayed output in Debian's chromium: the panel's log link opens it on its newest page,
the pager walks back and forth, and the download is the whole log as a named text file."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from fleet.choices import NodeState
from provisioning.choices import CommandStatus
from provisioning.models import AgentCommand, PhaseRecord
from tests import factories
from tests.support import scenes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]
TIMEOUT = 15_000  # ms: an upper bound on a condition, never a pause
BMC_PASSWORD = "Tr0ub4dor-bmc-&3"


def _scene():
    rack = factories.make_rack("R07")
    node = factories.make_node(rack=rack, position=1, bmc_password=BMC_PASSWORD)
    scenes.walk(node, NodeState.PROVISIONING)
    run = scenes.make_run(node, phases_done=11)  # secure_erase is running
    record = PhaseRecord.objects.get(run=run, phase="secure_erase")
    lines = [f"erase step {i}" for i in range(1, 1101)]
    lines[600] = f"ipmitool -P {BMC_PASSWORD} chassis status"  # line 602, after the header
    command = AgentCommand.objects.create(
        node=node,
        run=run,
        phase=record.phase,
        kind="secure_erase",
        status=CommandStatus.FAILED,
        exit_code=3,
        output="\n".join(lines),
    )
    return rack, node, run, record, command


def test_the_log_link_opens_the_newest_page_pages_and_downloads(
    open_as, server, db_thread, bob, tmp_path
):
    rack, node, run, record, command = db_thread(_scene)
    page = open_as(bob, f"/racks/{rack.pk}/?node={node.pk}")
    expect(page.locator(f"#node-panel-{node.pk}")).to_be_visible(timeout=TIMEOUT)

    page.click(f"#log-link-{record.phase}")
    where = page.locator("#log-where")
    # 1 header + 1,100 lines: three pages of 500, and the link opens the newest.
    expect(where).to_have_text("Page 3 of 3: lines 1001–1101 of 1101", timeout=TIMEOUT)
    expect(page.locator("#L1101")).to_contain_text("erase step 1100")
    expect(page.locator("#log-next")).to_have_count(0)
    page.screenshot(path=tmp_path / "log-newest.png", full_page=True)

    page.click("#log-previous")
    expect(where).to_have_text("Page 2 of 3: lines 501–1000 of 1101", timeout=TIMEOUT)
    expect(page.locator("#L602")).to_contain_text("ipmitool -P [redacted] chassis status")
    expect(page.locator("#phase-log")).not_to_contain_text(BMC_PASSWORD)

    page.click("#log-first")
    expect(where).to_have_text("Page 1 of 3: lines 1–500 of 1101", timeout=TIMEOUT)
    expect(page.locator("#L1")).to_contain_text(
        f"command {command.pk}: secure_erase (failed, exit 3)"
    )
    page.click("#log-next")
    expect(where).to_contain_text("Page 2 of 3", timeout=TIMEOUT)
    page.click("#log-last")
    expect(where).to_contain_text("Page 3 of 3", timeout=TIMEOUT)

    with page.expect_download(timeout=TIMEOUT) as info:
        page.click("#log-download")
    download = info.value
    assert download.suggested_filename == f"{node.serial}_run-{run.pk}_{record.phase}.log"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    text = saved.read_text()
    assert len(text.splitlines()) == 1101
    assert "erase step 1100" in text and BMC_PASSWORD not in text

    page.click("#log-back")
    expect(page.locator(f"#node-panel-{node.pk}")).to_be_visible(timeout=TIMEOUT)
