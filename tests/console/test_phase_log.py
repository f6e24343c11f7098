"""A phase's relayed output, read from the panel: paged, downloadable, redacted, refused to strangers."""

from __future__ import annotations

import html
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from acceptance.choices import Verdict
from acceptance.gates import GateName
from acceptance.models import GateResult
from provisioning.agents import link as agent_link
from provisioning.agents import logs as phase_logs
from provisioning.agents.sessions import CheckIn, check_in
from provisioning.choices import CommandStatus
from provisioning.models import AgentCommand, PhaseRecord
from tests import factories
from tests.support.scenes import booted_secret, make_run

pytestmark = pytest.mark.django_db

BMC_PASSWORD = "Tr0ub4dor-bmc-&3"
PER_PAGE = phase_logs.LINES_PER_PAGE


@pytest.fixture
def node(rack, manifest):
    return factories.make_node("SN-LOG-1", rack=rack, bmc_password=BMC_PASSWORD)


@pytest.fixture
def run(node):
    return make_run(node, phases_done=11)  # secure_erase (order 11) is running


def record_of(run, phase="secure_erase") -> PhaseRecord:
    return PhaseRecord.objects.get(run=run, phase=phase)


def command(run, phase="secure_erase", output="", **kw) -> AgentCommand:
    return AgentCommand.objects.create(
        node=run.node,
        run=run,
        phase=phase,
        kind=kw.pop("kind", "secure_erase"),
        output=output,
        **kw,
    )


def numbered(count: int, prefix: str = "line") -> str:
    return "\n".join(f"{prefix} {i}" for i in range(1, count + 1))


def page_url(record, page=None) -> str:
    url = reverse("console:phase-log", args=[record.pk])
    return f"{url}?page={page}" if page is not None else url


def shown_numbers(response) -> list[int]:
    return [line.number for line in response.context["page"].lines]


def test_the_log_reads_each_command_under_its_header_then_the_engine_notes(client, bob, run):
    record = record_of(run)
    first = command(
        run, output="nvme0: sanitize started\nnvme0: done\n", status=CommandStatus.DONE, exit_code=0
    )
    second = command(
        run, output="nvme1: sanitize started", status=CommandStatus.FAILED, exit_code=3
    )
    command(run, output="")  # relayed nothing: no chunk
    PhaseRecord.objects.filter(pk=record.pk).update(log="skipped by bob: drive replaced")
    client.force_login(bob)
    response = client.get(page_url(record))
    assert response.status_code == 200
    lines = [(line.number, line.text, line.header) for line in response.context["page"].lines]
    assert lines == [
        (1, f"── command {first.pk}: secure_erase (done, exit 0) ──", True),
        (2, "nvme0: sanitize started", False),
        (3, "nvme0: done", False),
        (4, f"── command {second.pk}: secure_erase (failed, exit 3) ──", True),
        (5, "nvme1: sanitize started", False),
        (6, "── engine ──", True),
        (7, "skipped by bob: drive replaced", False),
    ]
    page = response.content.decode()
    assert 'id="L5"' in page and "Page 1 of 1: lines 1–7 of 7" in page
    assert reverse("console:phase-log-download", args=[record.pk]) in page


def test_pages_of_500_lines_with_next_previous_and_the_newest_page(client, bob, run):
    record = record_of(run)
    command(run, output=numbered(1200))  # 1 header + 1200 lines = 1201 lines, 3 pages
    client.force_login(bob)

    first = client.get(page_url(record))
    assert shown_numbers(first) == list(range(1, PER_PAGE + 1))
    shown = first.content.decode()
    assert (
        'id="log-next"' in shown and 'href="?page=2"' in shown and 'id="log-previous"' not in shown
    )

    second = client.get(page_url(record, 2))
    assert shown_numbers(second) == list(range(501, 1001))
    assert second.context["page"].lines[0].text == "line 500"  # line 1 is the header
    assert 'href="?page=1"' in second.content.decode()

    newest = client.get(page_url(record, "last"))
    page = newest.context["page"]
    assert (page.number, page.pages, page.total_lines) == (3, 3, 1201)
    assert shown_numbers(newest) == list(range(1001, 1202))
    assert page.lines[-1].text == "line 1200"
    assert 'id="log-next"' not in newest.content.decode()


def test_a_page_that_is_no_page_is_a_clear_400(client, bob, run):
    record = record_of(run)
    command(run, output=numbered(10))
    client.force_login(bob)
    for asked in ("2", "0", "-1", "abc"):
        response = client.get(page_url(record, asked))
        assert response.status_code == 400, asked
        assert "page must be a number from 1 to 1, or 'last'" in response.content.decode()


def test_the_download_is_the_whole_log_as_a_named_text_attachment(client, bob, run):
    record = record_of(run)
    command(run, output=numbered(700), status=CommandStatus.DONE, exit_code=0)
    client.force_login(bob)
    response = client.get(reverse("console:phase-log-download", args=[record.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="SN-LOG-1_run-{run.pk}_secure_erase.log"'
    )
    text = b"".join(response.streaming_content).decode()
    lines = text.splitlines()
    assert len(lines) == 701 and lines[1] == "line 1" and lines[-1] == "line 700"


def test_a_gate_phase_name_makes_a_safe_file_name(run):
    record = PhaseRecord.objects.create(run=run, phase="gate:fabric", order=20)
    assert phase_logs.download_name(record) == f"SN-LOG-1_run-{run.pk}_gate-fabric.log"


def test_an_anonymous_user_is_sent_to_log_in_and_charlie_is_refused(client, charlie, run):
    record = record_of(run)
    command(run, output="secret-ish output")
    urls = [page_url(record), reverse("console:phase-log-download", args=[record.pk])]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    client.force_login(charlie)
    for url in urls:
        assert client.get(url).status_code == 403, url


def test_an_unknown_record_is_404_and_a_phase_without_a_log_has_no_download(client, bob, run):
    client.force_login(bob)
    assert client.get(reverse("console:phase-log", args=[999_999])).status_code == 404
    assert client.get(reverse("console:phase-log-download", args=[999_999])).status_code == 404
    quiet = record_of(run, "preflight")
    page = client.get(page_url(quiet))
    assert page.status_code == 200 and 'id="log-empty"' in page.content.decode()
    assert client.get(reverse("console:phase-log-download", args=[quiet.pk])).status_code == 404


def test_a_50k_line_log_sends_one_page_and_reads_only_the_commands_it_shows(client, bob, run):
    record = record_of(run)
    client.force_login(bob)
    command(run, output=numbered(100, "small"))
    client.get(page_url(record))  # warm the session and permission caches
    with CaptureQueriesContext(connection) as small:
        client.get(page_url(record, "last"))
    small_count = len(small.captured_queries)  # read now: the next request clears the log

    # A soak's worth: 50 commands of 1,000 lines each, on top of the small one.
    AgentCommand.objects.bulk_create(
        AgentCommand(
            node=run.node,
            run=run,
            phase="secure_erase",
            kind="run_tools",
            output=numbered(1000, f"cmd{c}"),
        )
        for c in range(50)
    )
    with CaptureQueriesContext(connection) as huge:
        response = client.get(page_url(record, "last"))
    queries = [q["sql"] for q in huge.captured_queries]
    page = response.context["page"]
    assert page.total_lines == 101 + 50 * 1001
    assert len(page.lines) == page.total_lines - (page.pages - 1) * PER_PAGE
    assert page.lines[-1].text == "cmd49 1000"
    middle = client.get(page_url(record, 50))
    assert len(middle.context["page"].lines) == PER_PAGE
    assert len(middle.content) < 200_000  # one page, not 50,000 lines
    assert len(queries) == small_count
    # The text is read only for the commands on the page: one or two, never all 51.
    reads = [sql for sql in queries if '"provisioning_agentcommand"."output" AS' in sql]
    assert len(reads) == 1 and " IN (" in reads[0], queries


def test_the_bmc_password_and_boot_credentials_never_show(client, bob, node, run):
    """The relay path stores what the agent sends: the log page redacts it on the way out."""
    boot_secret = booted_secret(run)
    claim = CheckIn(node.serial, node.mac_addresses, "boot-logs", "ephemeral", boot_secret)
    session, token = check_in(claim)
    sent = agent_link.send(session, run, "secure_erase", "run_tools", {})
    dmesg = (
        f"[    0.000000] Command line: BOOT_IMAGE=/vmlinuz greenlight.credential={boot_secret} quiet\n"
        f"ipmitool -P {BMC_PASSWORD} chassis status\n"
        f"curl -H 'Authorization: Bearer {token}'\n"
        '{"host_credential": "hc-9f8e7d6c5b4a", "image": "ok"}\n'
    )
    relayed = client.post(
        f"/agent/v1/commands/{sent.pk}/log",
        json.dumps({"text": dmesg}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        secure=True,
    )
    assert relayed.status_code == 200, relayed.content
    sent.refresh_from_db()
    assert sent.status == CommandStatus.QUEUED and boot_secret in sent.output  # stored as relayed

    record = record_of(run)
    client.force_login(bob)
    page = html.unescape(client.get(page_url(record)).content.decode())
    download = b"".join(
        client.get(reverse("console:phase-log-download", args=[record.pk])).streaming_content
    ).decode()
    panel = client.get(reverse("console:node-panel", args=[node.pk])).content.decode()
    for text in (page, download, panel):
        for secret in (boot_secret, BMC_PASSWORD, token, "hc-9f8e7d6c5b4a"):
            assert secret not in text
    for text in (page, download):
        assert "greenlight.credential=[redacted]" in text
        assert "ipmitool -P [redacted] chassis status" in text
        assert "Bearer [redacted]" in text
        assert '"host_credential": "[redacted]"' in text


def test_the_panel_links_each_phase_and_gate_with_a_log(client, bob, run):
    done = record_of(run, "bios_firmware")
    PhaseRecord.objects.filter(pk=done.pk).update(log="BIOS 2.1.4 -> 2.3.0")
    erase = record_of(run)
    command(run, output="nvme0: sanitize started")
    command(run, phase="nic_firmware", output="")  # relayed nothing: no link
    gate = PhaseRecord.objects.create(run=run, phase="gate:gpu_health", order=20)
    command(run, phase="gate:gpu_health", output="dcgmi diag -r 3: Pass")
    GateResult.objects.create(
        run=run, node=run.node, gate=GateName.GPU_HEALTH, verdict=Verdict.PASS
    )
    client.force_login(bob)
    panel = client.get(reverse("console:node-panel", args=[run.node.pk])).content.decode()
    for name, record in (("bios_firmware", done), ("secure_erase", erase)):
        assert f'id="log-link-{name}" href="{page_url(record, "last")}"' in panel
    assert 'id="log-link-nic_firmware"' not in panel and 'id="log-link-preflight"' not in panel
    assert f'id="log-link-gate-gpu_health" href="{page_url(gate, "last")}"' in panel
