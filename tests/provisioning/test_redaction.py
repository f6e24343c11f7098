"""A node's secrets never leave in what its agent sent: gate results' raw output, quoted errors."""

from __future__ import annotations

import pytest

from acceptance.choices import Verdict
from acceptance.gates import GateName
from acceptance.models import GateResult
from provisioning.agents import redaction
from provisioning.agents.sessions import CheckIn, check_in
from provisioning.choices import CommandStatus, Stage
from provisioning.core.engine import outcome_of_exception
from provisioning.core.phases import PHASES_BY_NAME
from provisioning.core.phases.base import PhaseContext
from provisioning.models import AgentCommand, BootCredential, PhaseRecord
from provisioning.outcomes import Failure
from provisioning.redfish import RedfishError
from tests import factories
from tests.support.scenes import booted_secret, make_run

pytestmark = pytest.mark.django_db

BMC_PASSWORD = "Tr0ub4dor-bmc-&3"


@pytest.fixture
def node(rack, manifest):
    return factories.make_node("SN-RED-1", rack=rack, bmc_password=BMC_PASSWORD)


@pytest.fixture
def secrets(node):
    """A run whose agent checked in: (run, boot secret, agent token, session)."""
    run = make_run(node, phases_done=9)
    boot_secret = booted_secret(run)
    session, token = check_in(
        CheckIn(node.serial, node.mac_addresses, "boot-red", "ephemeral", boot_secret)
    )
    return run, boot_secret, token, session


def leaky_text(boot_secret: str, token: str) -> str:
    return (
        f"Command line: BOOT_IMAGE=/vmlinuz greenlight.credential={boot_secret} quiet\n"
        f"ipmitool -P {BMC_PASSWORD} chassis status\n"
        f"Authorization: Bearer {token}\n"
    )


def test_the_redactor_replaces_longest_secrets_first_and_ignores_tiny_ones():
    redact = redaction.Redactor({"abc", "s3cret", "s3cret-longer", "two\nlines"})
    text = "abc s3cret-longer s3cret greenlight.credential=XYZ two"
    assert redact(text) == "abc [redacted] [redacted] greenlight.credential=[redacted] two"


@pytest.mark.parametrize(
    "printed",
    [
        "pw=pa%24%24%3Aw0rd%2F1",  # URL-encoded, as a query string carries it
        "blob cGEkJDp3MHJkLzE= end",  # base64
        "blob cGEkJDp3MHJkLzE end",  # base64 without its padding
        "> Authorization: Basic YWRtaW46cGEkJDp3MHJkLzE=",  # curl -v, admin:pa$$:w0rd/1
        "fetching https://admin:pa$$:w0rd@bmc.example/redfish/v1",  # URL userinfo
    ],
)
def test_encoded_forms_of_a_secret_are_redacted(printed):
    """Issue 30: a tool prints a password URL-encoded, in base64, as HTTP Basic or in a URL."""
    secret = "pa$$:w0rd/1"
    out = redaction.Redactor({secret})(printed)
    assert "[redacted]" in out
    for form in (secret, "cGEkJDp3MHJkLzE", "YWRtaW46cGEkJDp3MHJkLzE", "pa%24%24%3Aw0rd%2F1"):
        assert form not in out, out


@pytest.mark.parametrize(
    "printed",
    [
        "AUTHORIZATION: BASIC dXNlcjpvdGhlcg==",
        "authorization: basic dXNlcjpvdGhlcg==",
        # re matches "i" to the dotless and the dotted capital I without regard to case
        "Authorızation: Basic dXNlcjpvdGhlcg==",
        "AUTHORİZATION: BASİC dXNlcjpvdGhlcg==",
        "HTTPS://user:other-pass@bmc.example/redfish",
    ],
)
def test_credentials_by_their_shape_are_redacted_in_any_case(printed):
    """Their patterns run only where the text lowered holds what any match holds."""
    out = redaction.Redactor(set())(printed)
    assert "[redacted]" in out
    assert "dXNlcjpvdGhlcg" not in out and "other-pass" not in out


def test_text_holding_no_secret_compiles_and_runs_no_pattern_of_them(monkeypatch):
    # Judging a gate redacts every output it reads, and most hold none of the node's secrets:
    # one substring search each is a fraction of compiling and running their pattern.
    compiled = []
    real_compile = redaction.re.compile
    monkeypatch.setattr(
        redaction.re, "compile", lambda *a, **k: compiled.append(a[0]) or real_compile(*a, **k)
    )
    redact = redaction.Redactor({"hunter22", "s3cret-token"})
    clean = "GPU 0: 81559 MiB free, nothing secret"
    assert redact(clean) == clean
    assert compiled == []
    assert redact("pw hunter22") == "pw [redacted]"
    assert redact("and s3cret-token") == "and [redacted]"
    assert len(compiled) == 1, "compiled once, on the first text that holds a secret"


def test_a_tree_is_redacted_in_every_string_and_key_and_keeps_its_other_values():
    redact = redaction.Redactor({"hunter22"})
    tree = {"dmesg": ["ok", "pw hunter22"], "hunter22": {"n": 3, "on": True, "x": None}}
    assert redact.tree(tree) == {
        "dmesg": ["ok", "pw [redacted]"],
        "[redacted]": {"n": 3, "on": True, "x": None},
    }


def test_the_api_shows_a_gate_results_raw_output_redacted_and_keeps_it_stored(
    client, admin_user, node, secrets
):
    run, boot_secret, token, _ = secrets
    raw = {"dmesg": leaky_text(boot_secret, token), "dcgmi": "Diagnostic: Pass"}
    result = GateResult.objects.create(
        run=run, node=node, gate=GateName.GPU_HEALTH, verdict=Verdict.PASS, raw_output=raw
    )
    client.force_login(admin_user)
    response = client.get(f"/api/v1/gate-results/{result.pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    for secret in (boot_secret, BMC_PASSWORD, token):
        assert secret not in body
    shown = response.json()["raw_output"]
    assert shown["dcgmi"] == "Diagnostic: Pass"
    assert "greenlight.credential=[redacted]" in shown["dmesg"]
    assert "ipmitool -P [redacted] chassis status" in shown["dmesg"]
    result.refresh_from_db()
    assert result.raw_output == raw  # nothing lost: the evidence is kept as the node sent it


def test_a_phase_error_quoting_a_failed_commands_output_is_redacted(node, secrets):
    run, boot_secret, token, session = secrets
    record = PhaseRecord.objects.get(run=run, phase="nic_firmware")
    command = AgentCommand.objects.create(
        node=node,
        run=run,
        session=session,
        phase="nic_firmware",
        kind="flash_firmware",
        status=CommandStatus.FAILED,
        output=f"flint -d mlx5_0 burn\nflash refused, BMC said: password {BMC_PASSWORD} locked",
        result={"failed_device": "ConnectX-7 0"},
    )
    record.stage, record.command = Stage.FLASHING, command
    ctx = PhaseContext(run=run, node=node, record=record, manifest=run.manifest.spec,
                       command_fresh=True)  # fmt: skip
    outcome = PHASES_BY_NAME["nic_firmware"].flashed(ctx)
    assert isinstance(outcome, Failure)
    assert outcome.reason == (
        "ConnectX-7 0: firmware update failed: flash refused, BMC said: password [redacted] locked"
    )


def test_a_commands_tail_is_cut_after_redaction_so_no_half_secret_shows(node, secrets):
    run, boot_secret, token, session = secrets
    command = AgentCommand.objects.create(
        node=node, run=run, session=session, phase="gate:gpu_health", kind="run_tools",
        output=f"reset failed\n{leaky_text(boot_secret, token)}",
    )  # fmt: skip
    tail = redaction.output_tail(command, 60)
    assert len(tail) <= 60 and token[-8:] not in tail and tail.endswith("Bearer [redacted]\n")
    assert redaction.output_last_line(command) == "Authorization: Bearer [redacted]"


def test_a_nodes_iso_key_is_redacted_like_its_credential(node, secrets):
    # The key names the ISO that carries the credential: quoting the URL gives the credential.
    run, *_ = secrets
    key = BootCredential.objects.get(run=run).media_key
    text = f"curl -O https://greenlight.example/boot/v1/media/{key}.iso"
    assert redaction.redactor_for(node)(text) == (
        "curl -O https://greenlight.example/boot/v1/media/[redacted].iso"
    )


def test_an_escaped_bmc_error_echoing_the_iso_url_is_redacted(node, secrets):
    # A BMC that refuses the insert may quote the ImageURI it was sent: that URL's key serves
    # the ISO with the boot credential inside (issue 30).
    run, *_ = secrets
    key = BootCredential.objects.get(run=run).media_key
    exc = RedfishError("https://bmc/redfish/v1/Managers/1/VirtualMedia/CD1",
                       f"cannot fetch https://gl.example/boot/v1/media/{key}.iso: HTTP 500")  # fmt: skip
    outcome = outcome_of_exception(exc, node)
    assert key not in outcome.reason and "[redacted]" in outcome.reason
