"""enroll compares what a real BMC reports with the SKU, refuses a mismatch and names it."""

from __future__ import annotations

import shutil

import pytest
from django.core.management import CommandError, call_command

from fleet.choices import EventKind
from fleet.models import Event, Node
from provisioning.intake.enrollment import EnrollmentError, enroll_node
from tests import factories

from .static import CAPTURES, STATIC_BIN, sushy_static

# sushy-static serves the captures over plain HTTP on loopback.
PLAIN = "sushy-static on loopback serves no TLS"

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which(str(STATIC_BIN)) is None, reason="no sushy-static"),
]


@pytest.mark.parametrize(
    ("capture", "difference"),
    [
        # A DL385 with no GPU, a ConnectX-6 pair and a BlueField-2.
        ("hpe-ilo5-dl385-gen10plus-v2", "GPUs: SKU hgx-h100-8gpu has 8, the BMC reports 0"),
        ("hpe-ilo5-dl385-gen10plus-v2", "fabric NICs: SKU hgx-h100-8gpu has 8, the BMC reports 2"),
        ("hpe-ilo5-dl385-gen10plus-v2", "drives: SKU hgx-h100-8gpu has 8, the BMC reports 18"),
        # A BlueField-3's own BMC is no GPU node.
        ("nvidia-bluefield3-bmc", "GPUs: SKU hgx-h100-8gpu has 8, the BMC reports 0"),
        # A GB200 tray: four GPUs whose model the BMC does not give.
        ("nvidia-gb200", "GPUs: SKU hgx-h100-8gpu has 8, the BMC reports 4"),
        # The HPE Cray blade's node: four A100s, not H100s.
        ("hpe-cray-ex235n", "GPU model: SKU hgx-h100-8gpu has H100-SXM5-80GB, the BMC reports "
                            "NVIDIA_A100-SXM4-40GB"),
    ],
)  # fmt: skip
def test_enroll_refuses_hardware_that_is_not_the_sku(capture, difference, sku, tmp_path):
    # The Cray blade's BMC serves two nodes: each is enrolled by its system's address.
    system = "/redfish/v1/Systems/Node0" if capture == "hpe-cray-ex235n" else ""
    with sushy_static(CAPTURES / capture, tmp_path) as url:
        with pytest.raises(EnrollmentError) as refused:
            enroll_node(url + system, "reader", "not-used", sku=sku, plain_http_reason=PLAIN)
    assert f"does not match SKU {sku.name}: " in str(refused.value)
    assert difference in str(refused.value)
    assert not Node.objects.exists()


def test_enroll_accepts_the_hardware_of_its_sku(tmp_path):
    sku = factories.make_sku(
        "smc-hgx-h100", gpu_model="NVIDIA H100 80GB HBM3", nic_count=8, dpu_count=1, drive_count=8
    )
    with sushy_static(CAPTURES / "supermicro-hgx-sys821ge", tmp_path) as url:
        result = enroll_node(url, "reader", "not-used", sku=sku, plain_http_reason=PLAIN)
    assert result.node.serial == "S889914X3710910"
    assert result.sku_differences == []
    assert not Event.objects.filter(kind=EventKind.ATTENTION).exists()


def test_force_with_a_reason_enrolls_and_records_the_difference(sku, tmp_path, capsys):
    with sushy_static(CAPTURES / "nvidia-gb200", tmp_path) as url:
        with pytest.raises(CommandError, match="needs a reason"):
            call_command("enroll", "--bmc", url, "--username", "r", "--password", "p",
                         "--sku", sku.name, "--force", "--plain-http-reason", PLAIN)  # fmt: skip
        call_command("enroll", "--bmc", url, "--username", "r", "--password", "p",
                     "--sku", sku.name, "--force", "--reason", "GB200 pilot tray",
                     "--plain-http-reason", PLAIN)  # fmt: skip
    node = Node.objects.get()
    assert node.serial == "1583124820080"  # from the chassis: the system carries none
    event = Event.objects.get(node=node, kind=EventKind.ATTENTION)
    assert event.data["reason"] == "GB200 pilot tray"
    assert "GPUs: SKU hgx-h100-8gpu has 8, the BMC reports 4" in event.data["differences"]
    assert "GPUs: SKU hgx-h100-8gpu has 8" in event.message
