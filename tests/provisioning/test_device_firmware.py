"""A rack device's BMC bundle (an NVLink switch tray's BMC, CPLD and NVOS; issue 34) is done once
its BMC runs it: a device has no host of Greenlight's to reboot and no agent to wait for.

Against a lab switch tray's BMC, with the lab clock stopped: its task monitor gives the one 204
an OpenBMC gives for a finished task, which reads "done, activate it"; the bundle runs only after
the tray's AC cycle (ComputerSystem.Reset PowerCycle, lab/bmc/member_flavours.py), which the
phase sends once, then verifies the inventory instead of rebooting the tray into an ephemeral
environment it does not have.
"""

from __future__ import annotations

import pytest

from fleet.choices import NodeKind
from fleet.models import Node
from lab.hall import LabHall
from lab.manifests import TARGET_FIRMWARE, device_manifest_yaml
from provisioning.outcomes import Done, Wait
from provisioning.redfish.bmc import session_pool
from tests.factories import make_manifest, make_rack, make_sku

from .test_firmware_completion import BOOT, _look, _pushed


@pytest.fixture
def switch():
    with LabHall(1, flavours=("nvl_switch",), speed=0, seed=2) as running:
        # A BMC that keeps its finished tasks: its monitor answers 204 once, as bmcweb's does.
        running.nodes[0].forgets_tasks_on_bmc_reset = False
        yield running
        session_pool().close_all()


@pytest.mark.django_db
def test_a_switch_trays_bundle_is_power_cycled_once_then_verified(switch):
    make_sku("lab-switch")
    manifest = make_manifest(device_manifest_yaml("nvl_switch", "lab-switch", "http://files.test"))
    bmc = switch.bmcs[0]
    ctx = _pushed(switch, bmc, manifest, "bmc")
    Node.objects.filter(pk=ctx.node.pk).update(
        kind=NodeKind.SWITCH_TRAY, rack=make_rack("R-SW"), position=1, member_index=1
    )
    ctx.node.refresh_from_db()
    writes = len(bmc.node.writes)
    switch.advance(300)  # the bundle is written: pending until the tray's AC cycle
    assert isinstance(_look(ctx), Wait)
    switch.advance(BOOT * 2)  # the tray off, then back on with its new bundle
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert outcome.changes == [
        {"component": "bmc", "from": "88.0002.0900", "to": TARGET_FIRMWARE["nvl_switch"]["bmc"]}
    ]
    # No boot override: the one write after the update was the AC cycle.
    assert [w.rsplit("/", 1)[-1] for w in bmc.node.writes[writes:]] == ["ComputerSystem.Reset"]
