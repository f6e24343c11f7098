"""The client against an emulator nobody on the project wrote: sushy-tools' fake driver."""

from __future__ import annotations

import json
import time

import pytest
from django.core.management import CommandError, call_command

from provisioning.core.phase_state import PowerOnRequests
from provisioning.core.runs import start_run
from provisioning.outcomes import Done, Skipped, Wait
from provisioning.redfish import PowerAction, PowerState, RedfishClient
from provisioning.redfish.errors import ActionNotSupported, AuthenticationRefused, RedfishError
from tests import factories
from tests.phase_looks import look, mark_done
from tests.redfish.sushy import SYSTEM_MAC, SYSTEM_UUID

pytestmark = pytest.mark.peer

# sushy's fake driver applies a power change 1-11 s after answering.
READ_BACK_SECONDS = 20
LOOK_INTERVAL = 0.25


def client(sushy, **kw) -> RedfishClient:
    options = {"fingerprint": sushy.fingerprint, "timeout": 5.0, "backoff": 0.05}
    options.update(kw)
    return RedfishClient(sushy.url, sushy.username, sushy.password, **options)


def wait_for_power(c: RedfishClient, wanted: PowerState) -> PowerState:
    """Single looks in a bounded loop, as the pipeline engine's scheduled looks would be."""
    deadline = time.monotonic() + READ_BACK_SECONDS
    state = c.power_state()
    while state is not wanted and time.monotonic() < deadline:
        time.sleep(LOOK_INTERVAL)
        state = c.power_state()
    return state


def test_basic_auth_over_pinned_tls_and_identity(sushy):
    with client(sushy) as c:
        info = c.system_info()
        assert c.auth_mode == "basic"  # sushy has no SessionService
    assert info.id == SYSTEM_UUID
    assert info.manufacturer == "Sushy Emulator"


def test_wrong_password_is_refused(sushy):
    bad = RedfishClient(sushy.url, sushy.username, "wrong", fingerprint=sushy.fingerprint)
    with pytest.raises(AuthenticationRefused, match="401"):
        bad.system_info()


def test_power_on_then_off_verified_by_read_back(sushy):
    with client(sushy) as c:
        if c.power_state() is not PowerState.OFF:
            c.reset(PowerAction.OFF)
            assert wait_for_power(c, PowerState.OFF) is PowerState.OFF
        staged = c.reset(PowerAction.ON)
        assert staged.status in (200, 202, 204)
        assert wait_for_power(c, PowerState.ON) is PowerState.ON
        c.reset(PowerAction.OFF)
        assert wait_for_power(c, PowerState.OFF) is PowerState.OFF


def test_boot_override(sushy):
    with client(sushy) as c:
        c.set_boot_override("Pxe", once=True)
        boot = c.boot_override()
        # sushy's fake driver stores the target, but reads "Once" back as Continuous.
        assert boot.target == "Pxe" and boot.enabled in ("Once", "Continuous")
        c.set_boot_override("Hdd", once=False)
        assert c.boot_override().target == "Hdd"


def test_bios_and_firmware_inventory_are_reported_as_not_offered(sushy):
    with client(sushy) as c:
        with pytest.raises(ActionNotSupported, match="no BIOS resource"):
            c.bios_attributes()
        with pytest.raises(RedfishError, match="404|no firmware inventory") as caught:
            c.firmware_inventory()
        assert "FirmwareInventory" in caught.value.url or "UpdateService" in caught.value.url
        assert c.mac_addresses() == [SYSTEM_MAC]


def test_redfish_probe_command(sushy, capsys):
    call_command(
        "redfish_probe",
        sushy.url,
        "--username",
        sushy.username,
        "--password",
        sushy.password,
        "--insecure",
    )
    out = capsys.readouterr().out
    result = json.loads(out)
    assert result["system_id"] == SYSTEM_UUID
    assert result["cert_fingerprint"] == sushy.fingerprint
    assert result["macs"] == [SYSTEM_MAC]
    assert set(result["unsupported"]) >= {"bios", "firmware_inventory"}
    assert sushy.password not in out


@pytest.mark.django_db
def test_enroll_command_refuses_a_sku_the_hardware_does_not_match(sushy, sku):
    # sushy-tools' fake system has a Storage subsystem with no drives in it.
    with pytest.raises(CommandError) as refused:
        call_command("enroll", "--bmc", sushy.url, "--username", sushy.username,
                     "--password", sushy.password, "--sku", sku.name)  # fmt: skip
    assert f"does not match SKU {sku.name}: drives: SKU {sku.name} has 8, the BMC reports 0" in (
        str(refused.value)
    )
    assert sushy.password not in str(refused.value)


@pytest.mark.django_db
def test_enroll_command(sushy, capsys):
    sku = factories.make_sku("sushy-fake", drive_count=0)
    call_command(
        "enroll",
        "--bmc",
        sushy.url,
        "--username",
        sushy.username,
        "--password",
        sushy.password,
        "--sku",
        sku.name,
    )
    out = capsys.readouterr().out
    summary = json.loads(out)
    from fleet.models import Node

    node = Node.objects.get(serial=summary["serial"])
    # sushy's system has no SerialNumber: the chassis's stands in (quirks.serial_number).
    with client(sushy) as c:
        assert node.serial == c.system_info().serial != ""
    assert node.mac_addresses == [SYSTEM_MAC]
    assert node.bmc_cert_fingerprint == sushy.fingerprint
    assert "firmware_inventory" in summary["unsupported"]
    assert sushy.password not in out


# A UEFI HTTP boot of the node's own ISO (sushy's fake driver cannot record its URI).
UEFI_HTTP_BOOT = """  boot: uefi_http
  iso:
    url: http://127.0.0.1:8099/artifacts/ephemeral.iso
    sha256: %s""" % ("ab" * 32)


def _switched_off_node(sushy, rack, manifest):
    """A node on sushy's fake system, switched off, in a provisioning run of `manifest`."""
    with client(sushy) as c:
        if c.power_state() is not PowerState.OFF:
            c.reset(PowerAction.OFF)
            assert wait_for_power(c, PowerState.OFF) is PowerState.OFF
        c.set_boot_override("Hdd", once=False)  # not what the run boots: it must set its own
    node = factories.make_node(
        rack=rack, bmc_address=sushy.url, bmc_username=sushy.username,
        bmc_password=sushy.password, bmc_cert_fingerprint=sushy.fingerprint,
    )  # fmt: skip
    return start_run(node, manifest=manifest)


@pytest.mark.django_db
def test_a_switched_off_node_is_powered_on_straight_into_pxe(sushy, rack, manifest):
    # Ironic's order (boot device, then power), against an emulator nobody here wrote.
    run = _switched_off_node(sushy, rack, manifest)

    outcome, record = look(run, "power_on")
    assert isinstance(outcome, Wait) and outcome.reason == "powering on"
    assert PowerOnRequests.of(record.resume) == PowerOnRequests(1, "ephemeral")
    with client(sushy) as c:
        assert c.boot_override().target == "Pxe"
        assert wait_for_power(c, PowerState.ON) is PowerState.ON

    done, record = look(run, "power_on")
    assert isinstance(done, Done) and "boot" not in done.compared
    assert {"component": "boot", "from": "", "to": "ephemeral once"} in done.changes
    mark_done(record)
    skipped, _ = look(run, "boot_ephemeral")
    assert isinstance(skipped, Skipped), "the power-on's boot is on its way: no restart"
    with client(sushy) as c:
        c.reset(PowerAction.OFF)


@pytest.mark.django_db
def test_a_refused_first_boot_still_powers_on_and_says_why(sushy, rack):
    manifest = factories.make_manifest(
        factories.sample_manifest_yaml().replace("  boot: pxe", UEFI_HTTP_BOOT)
    )
    run = _switched_off_node(sushy, rack, manifest)

    outcome, record = look(run, "power_on")
    assert isinstance(outcome, Wait) and outcome.reason == "powering on"
    requests = PowerOnRequests.of(record.resume)
    assert requests.boots_into == "" and "PATCH answered 400" in requests.boot_refused
    with client(sushy) as c:
        assert wait_for_power(c, PowerState.ON) is PowerState.ON

    done, record = look(run, "power_on")
    assert isinstance(done, Done)
    assert done.compared["boot"].startswith("not set before the power-on, the BMC refused it: ")
    assert all(change["component"] != "boot" for change in done.changes)
    mark_done(record)
    # The boot is still to be set: boot_ephemeral tries it itself (and says why it cannot).
    with pytest.raises(RedfishError, match="PATCH answered 400"):
        look(run, "boot_ephemeral")
    with client(sushy) as c:
        c.reset(PowerAction.OFF)


def test_a_client_that_let_its_connection_go_connects_again_over_the_pinned_tls(sushy):
    # A pooled client idle past httpx's keep-alive closes its connection and keeps its session
    # (provisioning/redfish/pool.py; the lab test counts the sockets: sushy closes each
    # connection after its answer). Its next step must connect anew, pin checked and
    # credentials sent, to a server the project did not write.
    with client(sushy) as c:
        assert c.system_info().id == SYSTEM_UUID
        c.transport.release_connections()
        assert not c.transport.holds_connections
        assert c.power_state() in (PowerState.ON, PowerState.OFF)
        assert c.transport.holds_connections
