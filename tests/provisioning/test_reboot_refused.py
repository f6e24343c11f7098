"""A reboot against the lab's Dell BMC over real HTTPS: a reset the BMC refuses leaves the phase
where it was, not waiting for a boot that never comes; and the look reads the node's
ComputerSystem once between writes (Transport.holding), where it read it five times, and still
gets its client from a BMC that cannot list its system."""

from __future__ import annotations

from collections import Counter

import pytest
from django.utils import timezone

from lab.hall import LabHall
from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.common import reboot_into
from provisioning.models import PhaseRecord, Run
from provisioning.redfish import PowerState, errors
from provisioning.redfish.bmc import session_pool
from tests.factories import make_node
from tests.redfish.servers import canonical, json_answer, serve


@pytest.fixture
def bmc():
    with LabHall(1, flavours=("dell",), speed=0, seed=3) as hall:
        yield hall.bmc(0)
        # The doctored client must not be lent to anyone else in this process.
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


def _refuse(client, error):
    def reset(action):
        raise error

    client.reset = reset


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("error", "stage"),
    [
        # The BMC answered and refused: no reset happened, the phase goes back to its stage.
        (errors.BmcBusy("https://bmc", "POST answered 503"), "updating"),
        # No answer: the BMC may have acted, and resetting twice is worse than waiting.
        (errors.BmcUnreachable("https://bmc", "no answer within 10s"), "rebooting"),
    ],
)
def test_a_reset_that_fails_leaves_the_phase_where_the_bmc_left_the_node(
    bmc, manifest, error, stage
):
    ctx = _context(bmc, manifest)
    # The lab's bmc_503 fault strikes at random; this one must strike the reset itself.
    _refuse(ctx.bmc(), error)
    with pytest.raises(type(error)):
        reboot_into(ctx, "Pxe", "rebooting")
    ctx.close()
    assert PhaseRecord.objects.get(pk=ctx.record.pk).stage == stage


def _count_requests(transport) -> Counter:
    sent: Counter = Counter()
    send = transport._send

    def counted(method, url, *args, **kw):
        sent[method, url] += 1
        return send(method, url, *args, **kw)

    transport._send = counted
    return sent


def _counted_look(bmc, manifest):
    """A look's context, its client, the system's URL, and the requests sent from now on."""
    ctx = _context(bmc, manifest)
    client = ctx.bmc()
    return (
        ctx,
        client,
        client.transport.absolute(client.system_path()),
        _count_requests(client.transport),
    )


@pytest.mark.django_db
def test_a_reboot_reads_the_system_once_before_and_once_after_its_write(bmc, manifest):
    ctx, client, system, sent = _counted_look(bmc, manifest)
    reboot_into(ctx, "Pxe", "rebooting")
    # Read for the override's place, then (after the PATCH) for its read-back, which the power
    # state and the reset's allowed types and target reuse; then the reset's POST.
    assert sent["GET", system] == 2
    assert sum(n for (method, _), n in sent.items() if method == "PATCH") == 1
    assert sum(n for (method, _), n in sent.items() if method == "POST") == 1
    ctx.close()


@pytest.mark.django_db
def test_a_held_answer_lasts_until_a_write_and_the_end_of_the_look(bmc, manifest):
    ctx, client, system, sent = _counted_look(bmc, manifest)
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


@pytest.mark.django_db
def test_a_bmc_that_cannot_list_its_system_still_lends_the_look_its_client(manifest):
    # A BMC half back from a restart (an activation's manager reset): its root answers and its
    # Systems collection does not. Nothing is held; the phase's own read meets the error where
    # the phase handles it (here the power state reads as unknown).
    def answer(method: str, path: str):
        if canonical(path) == "/redfish/v1":
            return json_answer(
                {"@odata.id": "/redfish/v1", "Systems": {"@odata.id": "/redfish/v1/Systems"}}
            )
        return json_answer({"error": "restarting"}, status=503)

    with serve(answer) as url:
        node = make_node(bmc_address=url, bmc_plain_http_reason="a test BMC on loopback")
        run = Run.objects.create(node=node, manifest=manifest, status="running")
        record = PhaseRecord.objects.create(run=run, phase="bmc_firmware", order=1)
        ctx = PhaseContext(run=run, node=node, record=record, manifest=manifest.spec)
        assert ctx.bmc().power_state() == PowerState.UNKNOWN
        ctx.close()
