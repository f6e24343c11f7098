"""`redfish_act` against lab BMCs over pinned HTTPS: each act done and read back, a dry run that
changes nothing, and no password in anything it prints."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from lab.hall import LabBmc
from provisioning.redfish import RedfishClient

BOOT = 60  # lab seconds: enough for any reset of the lab to finish
DELL, HPE, SUPERMICRO = 0, 1, 2
IMAGE = "https://media.example/boot.iso"


def run_act(bmc: LabBmc, *args: str, password: str | None = None) -> dict | list:
    """Run `redfish_act` against a lab BMC, pinned to its certificate; return its JSON."""
    secret = password or bmc.node.password
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(
            "redfish_act",
            bmc.https_url,
            *args,
            "--username",
            bmc.node.username,
            f"--password={secret}",
            "--fingerprint",
            bmc.cert_fingerprint,
            "--timeout",
            "2",
            "--wait",
            "0",
            stdout=out,
            stderr=err,
        )
    except CommandError as exc:
        assert secret not in str(exc)
        raise
    finally:
        assert secret not in out.getvalue() + err.getvalue()
    return json.loads(out.getvalue())


def test_boot_once_pxe_reads_back_then_powers_on_into_it(hall):
    bmc = hall.bmc(DELL)
    booted = []
    bmc.node.on_boot.append(lambda node, target: booted.append(target))
    seen = run_act(bmc, "boot-once", "Pxe")
    assert seen["boot_override"]["target"] == "Pxe"
    assert seen["boot_override"]["enabled"] in ("Once", "Continuous")
    assert seen["reset"]["action"] == "reset:On"  # the node was off
    hall.advance(BOOT)
    assert booted == ["Pxe"]


def test_boot_once_with_no_reset_only_stages(hall):
    bmc = hall.bmc(HPE)
    seen = run_act(bmc, "boot-once", "Pxe", "--no-reset")
    assert seen["boot_override"]["target"] == "Pxe" and "reset" not in seen
    assert bmc.node.power == "Off"


def test_insert_media_reads_the_medium_back(hall):
    bmc = hall.bmc(DELL)
    seen = run_act(bmc, "insert-media", IMAGE)
    assert seen["media"]["inserted"] is True
    assert seen["media"]["image"].endswith("boot.iso")
    ejected = run_act(bmc, "eject-media")
    assert ejected["media"]["inserted"] is False


def test_set_bios_reads_the_pending_value_back(hall):
    bmc = hall.bmc(HPE)
    name, value = next((k, v) for k, v in bmc.node.bios_current.items() if isinstance(v, str))
    new = f"{value}-x" if value != "Enabled" else "Disabled"
    seen = run_act(bmc, "set-bios", f"{name}={new}")
    assert seen["pending"] == {name: new}
    assert bmc.node.bios_pending[name] == new


def test_power_on_then_off_is_read_back(hall):
    bmc = hall.bmc(SUPERMICRO)
    seen = run_act(bmc, "power", "on")
    assert seen["power_state"] in ("On", "PoweringOn")
    hall.advance(BOOT)
    seen = run_act(bmc, "power", "off")
    assert seen["power_state"] in ("Off", "PoweringOff")
    hall.advance(BOOT)
    assert bmc.node.power == "Off"


@pytest.mark.parametrize("flavour", [DELL, HPE, SUPERMICRO])
def test_a_dry_run_prints_the_writes_and_changes_nothing(hall, flavour, tmp_path):
    bmc = hall.bmc(flavour)
    name = next(iter(bmc.node.bios_current))
    # The lab's Supermicro takes multipart push only, as the X13 capture's BMC does for a file.
    image = tmp_path / "bmc-9.9.9.bin"
    image.write_bytes(b"\x5a" * 1024)
    source = str(image) if flavour == SUPERMICRO else "https://firmware.example/bmc-9.9.9.bin"
    printed = []
    for args in (
        ("boot-once", "Pxe"),
        ("insert-media", IMAGE),
        ("set-bios", f"{name}=1"),
        ("power", "on"),
        ("update-firmware", source),
    ):
        printed += run_act(bmc, *args, "--dry-run")
    assert bmc.node.writes == []
    assert bmc.node.power == "Off" and bmc.node.boot_target == "None"
    methods = [request["method"] for request in printed]
    assert methods.count("PATCH") >= 2 and methods.count("POST") >= 2
    assert bmc.node.sessions == {}  # logged out: the session's DELETE was sent


def test_a_refusal_is_a_command_error_without_the_password(hall):
    bmc = hall.bmc(DELL)
    with pytest.raises(CommandError, match="authentication refused"):
        run_act(bmc, "power", "on", password="not-the-password-7")
    with pytest.raises(CommandError, match="give --password"):
        call_command("redfish_act", bmc.https_url, "power", "on", "--username", "root")
    with pytest.raises(CommandError, match="power takes one of"):
        run_act(bmc, "power", "sideways")
    with pytest.raises(CommandError, match="NAME=VALUE"):
        run_act(bmc, "set-bios", "novalue")
    with pytest.raises(CommandError, match="neither a file"):
        run_act(bmc, "update-firmware", "no-such-file.bin")
    assert bmc.node.writes == []


def test_the_recording_masks_every_secret_and_sends_nothing(hall):
    bmc = hall.bmc(SUPERMICRO)
    password = bmc.node.password
    client = RedfishClient(
        bmc.https_url,
        bmc.node.username,
        password,
        fingerprint=bmc.cert_fingerprint,
        dry_run=True,
    )
    image = io.BytesIO(b"x" * 10)
    with client:
        answer = client.transport.request(
            "POST",
            "/redfish/v1/Managers/1/VirtualMedia/CD1/Actions/VirtualMedia.InsertMedia",
            json={"Image": f"https://root:{password}@media.example/a.iso", "Password": "dgx"},
            headers={"If-Match": '"1"'},
        )
        client.transport.request(
            "POST",
            "/redfish/v1/UpdateService/upload",
            files={
                "UpdateParameters": (None, json.dumps({"Targets": []}), "application/json"),
                "UpdateFile": ("bmc-9.9.9.bin", image, "application/octet-stream"),
            },
        )
    assert image.tell() == 0  # measured, not read away
    assert answer.status == 204 and answer.body is None
    insert, push = client.transport.recorded
    assert insert.body == {"Image": "https://root:***@media.example/a.iso", "Password": "***"}
    assert insert.headers == {"If-Match": '"1"', "Content-Type": "application/json"}
    assert push.body == {
        "UpdateParameters": {"Targets": []},
        "UpdateFile": {"filename": "bmc-9.9.9.bin", "size": 10},
    }
    assert password not in repr(client.transport.recorded)
    assert bmc.node.writes == []


def test_redfish_probe_takes_the_same_options(hall, monkeypatch):
    bmc = hall.bmc(HPE)
    monkeypatch.setenv("GREENLIGHT_BMC_PASSWORD", bmc.node.password)
    out = io.StringIO()
    call_command(
        "redfish_probe",
        bmc.https_url,
        "--username",
        bmc.node.username,
        "--fingerprint",
        bmc.cert_fingerprint,
        stdout=out,
    )
    probed = json.loads(out.getvalue())
    assert probed["cert_fingerprint"] == bmc.cert_fingerprint
    assert bmc.node.password not in out.getvalue()
