"""A BMC that serves two nodes (HPE Cray EX235n): one node per ComputerSystem, each addressed."""

from __future__ import annotations

import shutil

import pytest

from fleet.models import Node
from provisioning.intake.enrollment import EnrollmentError, enroll_node
from provisioning.redfish import RedfishClient
from tests import factories

from .static import CAPTURES, STATIC_BIN, sushy_static

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which(str(STATIC_BIN)) is None, reason="no sushy-static"),
]

# sushy-static serves the captures over plain HTTP on loopback.
PLAIN = "sushy-static on loopback serves no TLS"


@pytest.fixture
def cray(tmp_path):
    with sushy_static(CAPTURES / "hpe-cray-ex235n", tmp_path) as url:
        yield url


@pytest.fixture
def ex235n_sku():
    return factories.make_sku(
        "ex235n", gpu_count=4, gpu_model="A100-SXM4-40GB", nic_count=0, dpu_count=0,
        drive_count=0,
    )  # fmt: skip


def test_enrolling_the_bmc_names_each_node_to_enroll(cray, ex235n_sku):
    with pytest.raises(EnrollmentError) as refused:
        enroll_node(cray, "reader", "x", sku=ex235n_sku, plain_http_reason=PLAIN)
    assert "this BMC serves 2 nodes (Node0, Node1)" in str(refused.value)
    assert f"{cray}/redfish/v1/Systems/Node1" in str(refused.value)
    assert not Node.objects.exists()


def test_each_node_is_enrolled_by_its_system_address(cray, ex235n_sku):
    first = enroll_node(
        f"{cray}/redfish/v1/Systems/Node0", "reader", "x", sku=ex235n_sku, plain_http_reason=PLAIN
    )
    second = enroll_node(
        f"{cray}/redfish/v1/Systems/Node1", "reader", "x", sku=ex235n_sku, plain_http_reason=PLAIN
    )
    # Both nodes of the blade report the blade's serial: the system id keeps them apart.
    assert (first.node.serial, second.node.serial) == ("DP20300012:Node0", "DP20300012:Node1")
    assert Node.objects.count() == 2
    with RedfishClient(
        second.node.bmc_address, "reader", "x", retries=0, allow_plain_http=True
    ) as client:
        assert client.system_info().id == "Node1"
        assert client.manager_info()["id"] == "BMC"  # ManagerForServers, not a mezzanine MCU
        node1_bios = [i.id for i in client.firmware_inventory() if i.kind == "bios"]
    # One BMC's inventory covers both nodes: each node's entries are named for it, and a
    # node's firmware phases see only its own.
    assert node1_bios == ["Node1.BIOS"]
