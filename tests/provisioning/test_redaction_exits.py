"""Issue 30: a node's secrets, however a tool prints them, leave by none of the ways out.

A tool's output quotes the node's BMC password, its boot and host credentials and its agent's
token, all in one form: as they are, URL-encoded, in base64, in an HTTP Basic header or in a
URL's userinfo. The node's agent relays it from a gate that the engine then judges (the parser
cannot read it and its error quotes it), or a person uploads it. Then each way out that repeats
it is read: the gate result's metrics, the phase error and the run's last error in the API, the
node's events (rows and API), the webhook of its state change, the node panel, the gate
result's admin page, and for an upload its event and its banner.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from acceptance.models import GateResult
from acceptance.uploads import upload_output
from fleet.choices import EventKind
from fleet.models import Event, Node
from fleet.webhooks import state_change_payload
from provisioning.agents.redaction import REDACTED
from provisioning.agents.sessions import CheckIn, check_in
from provisioning.boot.credentials import (
    arm_for_boot,
    ephemeral_credential,
    mint_host_credential,
    secret_of,
)
from provisioning.choices import CommandStatus, PhaseStatus, RunStatus
from provisioning.core.engine import advance
from provisioning.core.phase_state import SoakState
from provisioning.core.runs import start_run
from provisioning.models import AgentCommand, AgentSession, PhaseRecord, Run
from tests import factories
from tests.redfish.servers import mockup_answers, serve
from tests.redfish.static import CAPTURES

pytestmark = pytest.mark.django_db

BMC_PASSWORD = "Tr0ub4dor-bmc-&3"
GATE = "gate:gpu_health"
# DMTF's public rack-mount mockup: a BMC that reports component integrity (attestation reads it).
DMTF = CAPTURES / "dmtf-public-rackmount1"
SMI_PASS = Path(__file__).resolve().parents[1] / "acceptance/samples/nvidia_smi_idle_pass.xml"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# How a tool may print a secret: the forms issue 30 names.
ENCODINGS = {
    "literal": lambda s: s,
    "url-encoded": lambda s: quote(s, safe=""),
    "base64": b64,
    "basic-auth": lambda s: f"> Authorization: Basic {b64('admin:' + s)}",
    "url-userinfo": lambda s: f"fetching https://admin:{s}@bmc.example/redfish/v1",
}


def forms(secret: str) -> set[str]:
    """Every form of `secret` that must not show, whichever form the tool printed."""
    return {
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        b64(secret),
        b64(secret).rstrip("="),
        b64("admin:" + secret).rstrip("="),
    }


def assert_clean(text: str, secrets: dict[str, str]) -> None:
    """`text` shows none of the secrets in any form, and did quote the tool (it shows [redacted])."""
    for name, secret in secrets.items():
        shown = sorted(f for f in forms(secret) if f in text)
        assert not shown, f"{name} leaks as {shown}"
    assert REDACTED in text, text[:2000]


def dcgm_output(printed: str) -> str:
    """`dcgmi diag -j` that could not run: its parser's error quotes the tool's message."""
    return json.dumps({"DCGM GPU Diagnostic": {"runtime_error": printed}})


def relayed_text(result: GateResult) -> str:
    """What the tool printed, read back from the dcgmi output a result keeps."""
    return json.loads(result.raw_output["dcgm"])["DCGM GPU Diagnostic"]["runtime_error"]


@contextmanager
def bmc_serving(node: Node, folder: Path) -> Iterator[None]:
    """The node's BMC is a mockup served on loopback (plain HTTP, with the reason)."""
    with serve(mockup_answers(folder)) as url:
        Node.objects.filter(pk=node.pk).update(
            bmc_address=url, bmc_plain_http_reason="a capture served on loopback by the test"
        )
        yield


@pytest.fixture
def node(rack, manifest, profile):
    return factories.make_node("SN-EXIT-1", rack=rack, bmc_password=BMC_PASSWORD)


@pytest.fixture
def relayed(node):
    """A run whose ephemeral agent checked in and whose OS has its credential:
    (run, the agent's session, {secret name: secret})."""
    run = start_run(node)
    boot_secret = secret_of(ephemeral_credential(run))
    arm_for_boot(node.pk)  # Greenlight booted the node into its ephemeral image
    session, token = check_in(
        CheckIn(node.serial, node.mac_addresses, "boot-exit", "ephemeral", boot_secret)
    )
    _, host_secret = mint_host_credential(node, run)
    secrets = {
        "BMC password": BMC_PASSWORD,
        "boot credential": boot_secret,
        "host credential": host_secret,
        "agent token": token,
    }
    return run, session, secrets


@pytest.fixture(params=sorted(ENCODINGS))
def printed(request, relayed):
    """What the tool printed: every secret of the node, in one encoding, a line each."""
    encode = ENCODINGS[request.param]
    _, _, secrets = relayed
    return "".join(f"{name}: {encode(secret)}\n" for name, secret in secrets.items())


def judged(run: Run, session: AgentSession, phase: str, stage: str, result: dict, **fields) -> Run:
    """The run after the engine's look at `phase` in `stage`, whose agent relayed `result`.

    The look fails the phase, and with no failure budget left, the run.
    """
    record = run.phases.get(phase=phase)
    run.phases.filter(order__lt=record.order).update(status=PhaseStatus.DONE)
    command = AgentCommand.objects.create(
        node=run.node,
        run=run,
        session=session,
        phase=phase,
        kind="run_tools",
        status=CommandStatus.DONE,
        result=result,
    )
    now = timezone.now()
    PhaseRecord.objects.filter(pk=record.pk).update(
        status=PhaseStatus.WAITING,
        stage=stage,
        command=command,
        started_at=now,
        stage_started_at=now,
        deadline_at=now + timedelta(hours=1),
        **fields,
    )
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.WAITING, next_look_at=now, failure_budget=0
    )
    run.refresh_from_db()
    advance(run.pk, run.step)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED, run.last_error
    return run


@pytest.fixture
def failed_gate(relayed, printed) -> Run:
    """The run after the engine judged its GPU health gate on the relayed output."""
    run, session, _ = relayed
    outputs = {"nvidia-smi": SMI_PASS.read_text(), "dcgm": dcgm_output(printed)}
    return judged(run, session, GATE, "running", {"outputs": outputs})


def test_the_gate_results_metrics_and_findings(failed_gate, relayed, printed):
    result = GateResult.objects.get(run=failed_gate)
    assert_clean(result.metrics["error"], relayed[2])
    assert_clean(json.dumps([result.metrics, result.findings, result.tool_versions]), relayed[2])
    assert relayed_text(result) == printed  # the raw output is kept as the node sent it


def test_the_phase_error_and_the_runs_last_error_in_the_api(failed_gate, relayed, client, bob):
    client.force_login(bob)
    for url in ("/api/v1/runs/", f"/api/v1/runs/{failed_gate.pk}/"):
        response = client.get(url)
        assert response.status_code == 200
        assert_clean(response.content.decode(), relayed[2])
    assert_clean(failed_gate.last_error, relayed[2])
    assert_clean(PhaseRecord.objects.get(run=failed_gate, phase=GATE).error, relayed[2])


def test_the_nodes_events_as_stored_and_in_the_api(failed_gate, relayed, client, bob):
    events = Event.objects.filter(node=failed_gate.node)
    assert_clean(json.dumps([[e.message, e.data] for e in events]), relayed[2])
    client.force_login(bob)
    response = client.get("/api/v1/events/", {"node": failed_gate.node_id})
    assert response.status_code == 200
    assert_clean(response.content.decode(), relayed[2])


def test_the_webhook_of_the_state_change(failed_gate, relayed):
    event = Event.objects.filter(node=failed_gate.node, kind=EventKind.STATE_CHANGED).latest("pk")
    assert event.data["to"] == "failed"
    body = json.dumps(state_change_payload(failed_gate.node, event))
    assert_clean(body, relayed[2])


def test_the_node_panel(failed_gate, relayed, client, bob):
    client.force_login(bob)
    response = client.get(reverse("console:node-panel", args=[failed_gate.node_id]))
    assert response.status_code == 200
    assert_clean(html.unescape(response.content.decode()), relayed[2])


def test_the_gate_results_admin_page(failed_gate, relayed, printed, client, alice):
    result = GateResult.objects.get(run=failed_gate)
    client.force_login(alice)
    response = client.get(reverse("admin:acceptance_gateresult_change", args=[result.pk]))
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "runtime_error" in page  # the raw output is shown: redacted
    assert_clean(page, relayed[2])
    result.refresh_from_db()
    assert relayed_text(result) == printed  # showing it redacted changed nothing stored


def test_an_upload_its_result_its_event_and_its_banner(relayed, printed, client, bob):
    run, _, secrets = relayed
    node = run.node
    client.force_login(bob)
    response = client.post(
        reverse("console:node-upload", args=[node.pk]),
        {"tool": "dcgm", "output": dcgm_output(printed)},
    )
    assert response.status_code == 302
    banner = " ".join(str(m) for m in get_messages(response.wsgi_request))
    assert_clean(banner, secrets)
    result = GateResult.objects.get(node=node, run=None)
    assert_clean(json.dumps([result.metrics, result.findings]), secrets)
    assert relayed_text(result) == printed  # kept as uploaded
    event = Event.objects.filter(node=node, kind=EventKind.GATE_RESULT).latest("pk")
    assert_clean(event.message, secrets)
    # The model function the API's upload calls too.
    again = upload_output(node, "dcgm", dcgm_output(printed), actor=bob)
    assert_clean(again.metrics["error"], secrets)


def test_the_soaks_result_and_the_runs_last_error(relayed, printed):
    """The burn-in's kernel log has an Xid line it cannot read: its error quotes the line, cut."""
    run, session, secrets = relayed
    sample = {"t": 60, "gpus": [{"gpu": 0, "temp_c": 50, "power_w": 300, "sm_clock_mhz": 1980}]}
    kernel_log = f"[  812.5] NVRM: Xid (PCI:0000:18:00): {printed.replace(chr(10), ' ')}\n"
    outputs = {"soak": json.dumps([sample]), "xid": kernel_log}
    # The chunk under way ends past the soak's length: this look judges the whole soak.
    ended = SoakState(0, 10**9, 10**9).as_json()
    run = judged(run, session, "gate:burn_in", "soaking", {"outputs": outputs}, resume=ended)
    result = GateResult.objects.get(run=run, gate="burn_in")
    assert "unreadable Xid line" in result.metrics["error"]
    assert_clean(result.metrics["error"], secrets)
    assert_clean(run.last_error, secrets)
    assert result.raw_output["xid"] == kernel_log  # kept as the node sent it


def test_the_attestation_verdict_and_the_runs_last_error(relayed, printed):
    """The node's TPM report quotes the secrets in its error and in a measurement it names."""
    run, session, secrets = relayed
    report = {"measurements": {"bios": printed}, "tpm": {"present": True, "error": printed}}
    outputs = {"attestation": json.dumps(report)}
    with bmc_serving(run.node, DMTF):  # its component integrity is recorded beside the quote
        run = judged(run, session, "gate:attestation", "keys", {"outputs": outputs})
    result = GateResult.objects.get(run=run, gate="attestation")
    assert "did not answer" in result.metrics["error"]
    assert_clean(json.dumps([result.metrics, result.findings]), secrets)
    assert_clean(run.last_error, secrets)


def test_a_secure_erase_failure_quoting_the_agents_verification(relayed, printed):
    run, session, secrets = relayed
    drive = {"serial": "S3XNNA0R1", "result": "failed", "verification": printed}
    run = judged(run, session, "secure_erase", "erasing", {"drives": [drive]})
    assert "erase failed" in run.last_error
    assert_clean(run.last_error, secrets)
    assert_clean(PhaseRecord.objects.get(run=run, phase="secure_erase").error, secrets)
