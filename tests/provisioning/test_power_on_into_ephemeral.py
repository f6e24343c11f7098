"""A node that is off is powered on straight into the ephemeral environment, as Ironic does (boot
device, then power): boot_ephemeral then restarts nothing, where it used to cost every node a
second POST. Against the lab's Dell and HPE BMCs over real HTTPS."""

from __future__ import annotations

import pytest
from django.utils import timezone

from lab.hall import LabHall
from provisioning.choices import PhaseStatus, RunKind
from provisioning.core.phase_state import PowerOnRequests
from provisioning.core.runs import start_run
from provisioning.models import BootCredential, PhaseRecord
from provisioning.outcomes import Done, Skipped, Wait
from provisioning.redfish.bmc import session_pool
from tests.factories import make_node
from tests.phase_looks import look, mark_done

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["dell", "hpe"])
def bmc(request):
    # speed 0: the lab's clock stands still, so the node stays where the requests left it.
    with LabHall(1, flavours=(request.param,), speed=0, seed=11) as hall:
        lab = hall.bmc(0)
        assert lab.node.power == "Off"
        yield lab
        session_pool().close_all()


def _run(bmc, rack, kind=RunKind.PROVISION):
    node = make_node(
        rack=rack, bmc_address=bmc.https_url, bmc_username=bmc.node.username,
        bmc_password=bmc.node.password, bmc_cert_fingerprint=bmc.cert_fingerprint,
    )  # fmt: skip
    run = start_run(node, kind=kind)
    return node, run


def test_power_on_sets_the_ephemeral_boot_before_it_powers_the_node_on(bmc, rack, manifest):
    node, run = _run(bmc, rack)
    outcome, record = look(run, "power_on")

    assert isinstance(outcome, Wait) and outcome.reason == "powering on"
    assert bmc.node.power == "PoweringOn"
    assert (bmc.node.boot_target, bmc.node.boot_enabled) == ("Pxe", "Once")
    assert PowerOnRequests.of(record.resume).boots_into == "ephemeral"
    # The credential the staged boot redeems is armed for it.
    assert BootCredential.objects.get(run=run, environment="ephemeral").boots_armed == 1

    bmc.node.power = "On"  # the lab's boot, as its clock would end it
    done, _ = look(run, "power_on")
    assert isinstance(done, Done)
    assert {"component": "boot", "from": "", "to": "ephemeral once"} in done.changes


def test_boot_ephemeral_restarts_nothing_after_such_a_power_on(bmc, rack, manifest):
    node, run = _run(bmc, rack)
    look(run, "power_on")
    bmc.node.power = "On"
    outcome, record = look(run, "power_on")
    mark_done(record)
    boots = bmc.node.boot_count

    outcome, _ = look(run, "boot_ephemeral")

    assert isinstance(outcome, Skipped)
    assert "set before the power-on" in outcome.compared["boot"]
    # No restart: the override is still waiting for the power-on's boot, and power stays on.
    assert bmc.node.power == "On" and bmc.node.boot_count == boots
    assert (bmc.node.boot_target, bmc.node.boot_enabled) == ("Pxe", "Once")


def test_a_run_that_boots_its_disk_next_powers_on_its_own_boot_order(bmc, rack, manifest):
    # Revalidation: power_on is followed by boot_disk, which sets the disk itself.
    node, run = _run(bmc, rack, kind=RunKind.REVALIDATE)
    outcome, record = look(run, "power_on")

    assert isinstance(outcome, Wait) and bmc.node.power == "PoweringOn"
    assert bmc.node.boot_enabled != "Once"
    assert PowerOnRequests.of(record.resume).boots_into == ""


def test_boot_ephemeral_restarts_a_node_whose_power_on_set_no_boot(bmc, rack, manifest):
    node, run = _run(bmc, rack)
    power_on = run.phases.get(phase="power_on")
    # Powered on by a Greenlight before this one, or by a BMC that refused the override.
    PhaseRecord.objects.filter(pk=power_on.pk).update(
        status=PhaseStatus.DONE, started_at=timezone.now(), resume=PowerOnRequests(1).into(None)
    )
    bmc.node.power = "On"

    outcome, _ = look(run, "boot_ephemeral")

    assert isinstance(outcome, Done)
    assert bmc.node.power == "PoweringOff"  # restarted into the ephemeral environment
    assert (bmc.node.boot_target, bmc.node.boot_enabled) == ("Pxe", "Once")
