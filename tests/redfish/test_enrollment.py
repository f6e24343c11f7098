"""Enrollment by discovery against the lab, the enroll and redfish_probe commands, re-pinning."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from fleet.choices import ComponentKind, EventKind
from fleet.models import Component, Event, Node
from provisioning.intake.enrollment import EnrollmentError, enroll_node, repin_bmc_certificate
from provisioning.redfish.errors import CertificateMismatch

pytestmark = pytest.mark.django_db


def enroll(bmc, **kw):
    return enroll_node(bmc.https_url, bmc.node.username, bmc.node.password, timeout=3, **kw)


def test_enroll_creates_node_components_pin_and_events(hall, sku, rack):
    bmc = hall.bmc(0)
    result = enroll(bmc, sku=sku.name, rack=f"{rack.site.name}/{rack.name}", position=10)
    node = result.node
    assert result.created
    assert node.serial == bmc.node.serial
    assert node.mac_addresses == bmc.node.macs
    assert node.bmc_cert_fingerprint == bmc.cert_fingerprint
    assert node.bmc_password == bmc.node.password
    assert (node.rack, node.position) == (rack, 10)
    kinds = dict(Component.objects.filter(node=node).values_list("slot", "kind").order_by("slot"))
    assert kinds["BMC"] == ComponentKind.BMC
    assert kinds["BIOS"] == ComponentKind.BIOS
    assert kinds["DPU 0"] == ComponentKind.DPU
    assert kinds["NIC 3"] == ComponentKind.NIC
    assert len(kinds) == 22  # BMC, BIOS, HGX, 8 NICs, 2 DPUs, 8 NVMe and the power supply
    assert set(
        Component.objects.filter(node=node, kind=ComponentKind.NVME).values_list(
            "firmware_version", flat=True
        )
    ) == {bmc.node.firmware["nvme"]}
    # Every entry whose kind is known, the HGX tray's GPUs, NVSwitches and ERoTs included.
    assert result.components == 21 + 21 + 1  # + HGX parts + the power supply
    recorded = list(Event.objects.filter(node=node).order_by("id").values_list("kind", flat=True))
    assert recorded == [EventKind.ENROLLED, EventKind.BMC_CERT_PINNED]
    for event in Event.objects.filter(node=node):
        assert bmc.node.password not in json.dumps(event.data) + event.message


@pytest.mark.parametrize("index", [1, 2])
def test_every_flavour_enrolls(hall, sku, index):
    bmc = hall.bmc(index)
    node = enroll(bmc, sku=sku).node
    assert node.serial == bmc.node.serial
    assert Component.objects.filter(node=node, kind=ComponentKind.BIOS).count() == 1


def test_enrolling_again_updates_instead_of_duplicating(hall, sku):
    bmc = hall.bmc(1)
    enroll(bmc, sku=sku)
    hall.bmc(1).node.firmware["bios"] = "A47 v2.60"
    again = enroll(bmc)  # the SKU is known from the first enrollment
    assert not again.created
    assert Node.objects.filter(serial=bmc.node.serial).count() == 1
    bios = Component.objects.get(node=again.node, kind=ComponentKind.BIOS)
    assert bios.firmware_version == "A47 v2.60"
    assert again.node.events.filter(kind=EventKind.UPDATED).count() == 0  # nothing on the node row
    assert again.changed == []


def test_new_node_needs_a_sku(hall):
    with pytest.raises(EnrollmentError, match="give its SKU"):
        enroll(hall.bmc(0))


def test_changed_certificate_is_refused_until_repinned(hall, sku, alice):
    bmc = hall.bmc(0)
    node = enroll(bmc, sku=sku).node
    Node.objects.filter(pk=node.pk).update(bmc_cert_fingerprint=hall.bmc(1).cert_fingerprint)
    with pytest.raises(CertificateMismatch, match="re-pin it explicitly"):
        enroll(bmc)
    node.refresh_from_db()
    pinned = repin_bmc_certificate(node, alice, timeout=3)
    assert pinned == bmc.cert_fingerprint
    node.refresh_from_db()
    assert node.bmc_cert_fingerprint == bmc.cert_fingerprint
    event = node.events.filter(kind=EventKind.BMC_CERT_PINNED).first()
    assert event.actor == alice
    assert event.data == {
        "fingerprint": bmc.cert_fingerprint,
        "previous": hall.bmc(1).cert_fingerprint,
    }
    assert not enroll(bmc).created  # accepted again


def test_expected_fingerprint_that_does_not_match_is_refused(hall, sku):
    with pytest.raises(CertificateMismatch, match="not the expected"):
        enroll(hall.bmc(0), sku=sku, fingerprint=hall.bmc(2).cert_fingerprint)
    assert not Node.objects.exists()


def test_enroll_command_against_the_lab(hall, sku, capsys):
    bmc = hall.bmc(2)
    call_command(
        "enroll",
        "--bmc",
        bmc.https_url,
        "--username",
        bmc.node.username,
        "--password",
        bmc.node.password,
        "--sku",
        sku.name,
    )
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert summary["serial"] == bmc.node.serial and summary["created"]
    assert summary["cert_fingerprint"] == bmc.cert_fingerprint
    assert bmc.node.password not in out


def test_enroll_command_reports_refusals_without_the_password(hall, sku):
    bmc = hall.bmc(0)
    hall.set_fault(0, "wrong_credentials")
    with pytest.raises(CommandError, match="authentication refused") as caught:
        call_command(
            "enroll",
            "--bmc",
            bmc.https_url,
            "--username",
            "root",
            "--password",
            bmc.node.password,
            "--sku",
            sku.name,
        )
    assert bmc.node.password not in str(caught.value)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_redfish_probe_command_against_the_lab(hall, index, capsys):
    bmc = hall.bmc(index)
    call_command(
        "redfish_probe",
        bmc.https_url,
        "--username",
        bmc.node.username,
        "--password",
        bmc.node.password,
        "--insecure",
    )
    out = capsys.readouterr().out
    result = json.loads(out)
    assert result["serial"] == bmc.node.serial
    assert result["cert_fingerprint"] == bmc.cert_fingerprint
    assert result["power_state"] == "Off"
    assert result["boot_override"] == {"target": "None", "enabled": "Disabled", "mode": "UEFI"}
    assert result["bios_attribute_count"] == len(bmc.node.bios_current)
    managed = [
        i
        for i in result["firmware_inventory"]
        if i["part"] in ("bmc", "bios", "hmc", "baseboard", "nic", "dpu", "drive")
    ]
    assert len(managed) == 21
    assert (len(result["gpus"]), len(result["nics"]), len(result["dpus"])) == (8, 8, 2)
    assert len(result["drives"]) == 8
    assert result["macs"] == bmc.node.macs
    assert result["unsupported"] == {}
    assert bmc.node.password not in out


def test_redfish_probe_without_pin_or_insecure_refuses_self_signed(hall):
    bmc = hall.bmc(0)
    with pytest.raises(CommandError, match="no fingerprint pinned"):
        call_command(
            "redfish_probe", bmc.https_url, "--username", "root", "--password", bmc.node.password
        )
