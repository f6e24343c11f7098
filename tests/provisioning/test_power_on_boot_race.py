"""The boot a run's power-on started may check in late, after the credential was armed for the
next boot: it is Greenlight's own boot, not someone else's (a clean-clone CI run on a busy host
aborted a Dell lab run on exactly this).
"""

from __future__ import annotations

import json
import random

import pytest
from django.test import Client

from fleet.choices import NodeState
from lab.hall import LabHall
from provisioning.boot.credentials import ephemeral_credential, secret_of
from provisioning.choices import PhaseStatus, RunStatus, Stage
from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.common import reboot_into
from provisioning.models import BootCredential, PhaseRecord
from provisioning.redfish.bmc import session_pool
from tests.factories import make_node
from tests.support.scenes import make_run, walk

pytestmark = pytest.mark.django_db


@pytest.fixture
def bmc():
    with LabHall(1, flavours=("dell",), speed=0, seed=5) as hall:
        lab = hall.bmc(0)
        lab.node.power = "On"  # the run's power-on boot is under way
        yield lab
        session_pool().close_all()


def _checkin(node, secret, boot_id):
    client = Client(REMOTE_ADDR=f"10.9.{random.randrange(255)}.{random.randrange(1, 255)}")
    body = {
        "serial": node.serial,
        "macs": node.mac_addresses,
        "boot_id": boot_id,
        "environment": "ephemeral",
        "credential": secret,
    }
    return client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")


def _restart_into_ephemeral(bmc, rack, *, power_on: str):
    """A run whose power_on phase ended `power_on`, restarting the node into its ephemeral
    environment before any boot checked in."""
    node = make_node(
        rack=rack, bmc_address=bmc.https_url, bmc_username=bmc.node.username,
        bmc_password=bmc.node.password, bmc_cert_fingerprint=bmc.cert_fingerprint,
    )  # fmt: skip
    walk(node, NodeState.PROVISIONING)
    run = make_run(node, phases_done=2)
    PhaseRecord.objects.filter(run=run, phase="power_on").update(status=power_on)
    credential = ephemeral_credential(run)
    record = run.phases.get(phase="boot_ephemeral")
    ctx = PhaseContext(run=run, node=node, record=record, manifest=run.manifest.spec)
    try:
        reboot_into(ctx, "Pxe", Stage.REBOOTING)
    finally:
        ctx.close()
    return node, run, secret_of(credential)


def test_the_power_on_boot_checking_in_late_is_not_a_contest(bmc, rack):
    node, run, secret = _restart_into_ephemeral(bmc, rack, power_on=PhaseStatus.DONE)
    assert BootCredential.objects.get(run=run).boots_armed == 2

    assert _checkin(node, secret, "power-on-boot").status_code == 200
    assert _checkin(node, secret, "restart-boot").status_code == 200

    run.refresh_from_db()
    assert run.status != RunStatus.ABORTED
    # Two boots were ordered and two came: a third is someone else.
    third = _checkin(node, secret, "third-boot")
    assert third.status_code == 403 and "someone else redeemed" in third.json()["error"]


def test_a_node_greenlight_did_not_power_on_earns_one_redemption(bmc, rack):
    # Already on when the run began (power_on skipped): its boot was nobody's order.
    node, run, secret = _restart_into_ephemeral(bmc, rack, power_on=PhaseStatus.SKIPPED)
    assert BootCredential.objects.get(run=run).boots_armed == 1

    assert _checkin(node, secret, "restart-boot").status_code == 200
    second = _checkin(node, secret, "other-boot")
    assert second.status_code == 403 and "someone else redeemed" in second.json()["error"]
