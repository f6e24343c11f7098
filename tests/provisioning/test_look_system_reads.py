"""A look reads the node's ComputerSystem once between writes (Transport.holding), against the
lab's Dell BMC over real HTTPS: a reboot read it five times, three of them right after another."""

from __future__ import annotations

from collections import Counter

import pytest
from django.utils import timezone

from lab.hall import LabHall
from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.common import reboot_into
from provisioning.models import PhaseRecord, Run
from provisioning.redfish.bmc import session_pool
from tests.factories import make_node

pytestmark = pytest.mark.django_db


@pytest.fixture
def bmc():
    with LabHall(1, flavours=("dell",), speed=0, seed=3) as hall:
        yield hall.bmc(0)
        # The counting client must not be lent to anyone else in this process.
        session_pool().close_all()


def _context(bmc, manifest) -> PhaseContext:
    node = make_node(
        bmc_address=bmc.https_url, bmc_username=bmc.node.username,
        bmc_password=bmc.node.password, bmc_cert_fingerprint=bmc.cert_fingerprint,
    )  # fmt: skip
    run = Run.objects.create(node=node, manifest=manifest, status="running")
    record = PhaseRecord.objects.create(
        run=run, phase="hgx_firmware", order=1, status="running", started_at=timezone.now(),
        stage="updating",
    )  # fmt: skip
    return PhaseContext(run=run, node=node, record=record, manifest=manifest.spec)


def _count_requests(transport) -> Counter:
    sent: Counter = Counter()
    send = transport._send

    def counted(method, url, *args, **kw):
        sent[method, url] += 1
        return send(method, url, *args, **kw)

    transport._send = counted
    return sent


def test_a_reboot_reads_the_system_once_before_and_once_after_its_write(bmc, manifest):
    ctx = _context(bmc, manifest)
    client = ctx.bmc()
    system = client.transport.absolute(client.system_path())
    sent = _count_requests(client.transport)
    reboot_into(ctx, "Pxe", "rebooting")
    # Read for the override's place, then (after the PATCH) for its read-back, which the power
    # state and the reset's allowed types and target reuse; then the reset's POST.
    assert sent["GET", system] == 2
    assert sum(n for (method, _), n in sent.items() if method == "PATCH") == 1
    assert sum(n for (method, _), n in sent.items() if method == "POST") == 1
    ctx.close()


def test_a_held_answer_lasts_until_a_write_and_the_end_of_the_look(bmc, manifest):
    ctx = _context(bmc, manifest)
    client = ctx.bmc()
    system = client.transport.absolute(client.system_path())
    sent = _count_requests(client.transport)
    assert client.power_state() == client.power_state()
    assert sent["GET", system] == 1
    client.set_boot_override("Pxe", once=True)  # a write: the next read goes to the BMC
    assert client.boot_override().target == "Pxe"
    assert sent["GET", system] == 2, "the place reused the power state's; a fresh read after"
    ctx.close()
    # Outside a look (the drift audit, intake, a tool) every read goes to the BMC.
    client.power_state()
    client.power_state()
    assert sent["GET", system] == 4
