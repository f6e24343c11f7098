"""A rack device's firmware phase makes its new image run the way the real device needs (issue 34,
lab/bmc/member_flavours.py): a power shelf's PMC, which holds a pushed image for its reboot while
its HttpPushUriApplyTime reads OnReset, is set to Immediate first; an NVLink switch tray, which
runs a written image only after its AC cycle, gets exactly one ComputerSystem.Reset PowerCycle.

Each test drives the phase from its start against a lab BMC with the lab clock stopped, the
image served by a small artifact server of the lab's artifacts.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from fleet.choices import NodeKind
from lab.artifacts import artifact_bytes, artifact_sha256
from lab.bmc import update_service
from lab.hall import LabHall
from provisioning.choices import Stage
from provisioning.core.phases import PHASES_BY_NAME
from provisioning.core.phases.base import PhaseContext
from provisioning.models import PhaseRecord, Run
from provisioning.outcomes import Done, Wait
from provisioning.redfish import activation, errors
from provisioning.redfish.activation import Activation
from provisioning.redfish.bmc import session_pool
from tests.factories import make_node
from tests.redfish.conftest import lab_client

BOOT = 40.0
POWER_CYCLE = "/redfish/v1/Systems/System_0/Actions/ComputerSystem.Reset"


class _Artifacts(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = artifact_bytes(self.path.rsplit("/", 1)[-1])
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def artifacts():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Artifacts)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/artifacts"
    server.shutdown()
    server.server_close()


@pytest.fixture
def members():
    with LabHall(2, flavours=("power_shelf", "nvl_switch"), speed=0, seed=5) as running:
        yield running
        session_pool().close_all()


def _context(bmc, kind: str, manifest, artifacts: str, version: str) -> PhaseContext:
    """The node's bmc_firmware phase, not yet started, aiming at `version`."""
    name = f"bmc-{version}.bin"
    spec = {"firmware": {"bmc": {
        "version": version, "url": f"{artifacts}/{name}", "sha256": artifact_sha256(name),
    }}}  # fmt: skip
    node = make_node(
        kind=kind, bmc_address=bmc.https_url, bmc_username=bmc.node.username,
        bmc_password=bmc.node.password, bmc_cert_fingerprint=bmc.cert_fingerprint,
    )  # fmt: skip
    run = Run.objects.create(node=node, manifest=manifest, status="running")
    record = PhaseRecord.objects.create(
        run=run, phase="bmc_firmware", order=1, status="running", started_at=timezone.now(),
    )  # fmt: skip
    return PhaseContext(run=run, node=node, record=record, manifest=spec)


def _look(ctx: PhaseContext):
    try:
        return PHASES_BY_NAME[ctx.record.phase].execute(ctx)
    finally:
        ctx.close()


def _writes(bmc, path: str) -> int:
    return sum(1 for w in bmc.node.writes if w.lower().endswith(path.lower()))


@pytest.mark.django_db
def test_a_shelf_at_on_reset_is_set_immediate_before_the_push_and_runs_its_image(
    members, manifest, artifacts
):
    shelf = members.bmc_of_flavour("power_shelf")
    ctx = _context(shelf, NodeKind.POWER_SHELF, manifest, artifacts, "01.02.07")
    assert isinstance(_look(ctx), Wait)
    assert ctx.record.stage == Stage.UPDATING
    assert shelf.node.writes.index("PATCH /redfish/v1/UpdateService") < shelf.node.writes.index(
        "POST /redfish/v1/UpdateService/update"
    )
    with lab_client(shelf) as client:
        service = client.get("/redfish/v1/UpdateService")
    assert service["HttpPushUriOptions"]["HttpPushUriApplyTime"]["ApplyTime"] == "Immediate"
    members.advance(600)
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert shelf.node.firmware["bmc"] == "01.02.07"
    # No reset was needed: the image ran as written.
    assert _writes(shelf, "Manager.Reset") == 0


@pytest.mark.django_db
def test_a_shelf_that_allows_no_immediate_fails_the_phase_in_its_words_before_any_push(
    members, manifest, artifacts, monkeypatch
):
    # A PMC that lists OnReset alone (a lab variation of the shelf).
    monkeypatch.setattr(update_service, "POWER_SHELF_APPLY_TIMES", ("OnReset",))
    shelf = members.bmc_of_flavour("power_shelf")
    ctx = _context(shelf, NodeKind.POWER_SHELF, manifest, artifacts, "01.02.07")
    with pytest.raises(errors.ConfigurationError, match="allows no Immediate"):
        _look(ctx)
    assert not any(w.startswith(("PATCH", "POST /redfish/v1/UpdateService/update"))
                   for w in shelf.node.writes)  # fmt: skip


@pytest.mark.django_db
def test_a_switch_tray_gets_exactly_one_power_cycle_and_its_new_image_is_verified(
    members, manifest, artifacts
):
    switch = members.bmc_of_flavour("nvl_switch")
    ctx = _context(switch, NodeKind.SWITCH_TRAY, manifest, artifacts, "88.0002.1139")
    before = switch.node.firmware["bmc"]
    assert isinstance(_look(ctx), Wait)
    members.advance(600)  # written: pending until the tray's AC cycle
    assert switch.node.firmware["bmc"] == before
    assert isinstance(_look(ctx), Wait)
    assert ctx.record.stage == Stage.ACTIVATING
    assert _writes(switch, POWER_CYCLE) == 1
    # A look before the tray is back (a worker that resumed the phase): no second cycle.
    assert isinstance(_look(ctx), Wait)
    assert _writes(switch, POWER_CYCLE) == 1
    members.advance(BOOT * 2)
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert outcome.changes[0]["to"] == "88.0002.1139"
    assert switch.node.firmware["bmc"] == "88.0002.1139" and switch.node.power == "On"
    assert _writes(switch, POWER_CYCLE) == 1


@pytest.mark.django_db
def test_a_switch_tray_is_known_by_its_mgx_nvswitch_chassis_even_enrolled_as_a_server(
    members, manifest, artifacts
):
    # The quirk row's identification, not the enrolled kind: NVIDIA's MGX_NVSwitch_0 chassis.
    switch = members.bmc_of_flavour("nvl_switch")
    ctx = _context(switch, NodeKind.SERVER, manifest, artifacts, "88.0002.1139")
    with lab_client(switch) as client:
        assert activation.is_nvlink_switch_tray(client)
        assert activation.rule_for(client, "bmc", NodeKind.SERVER) is Activation.POWER_CYCLE
    assert isinstance(_look(ctx), Wait)
    members.advance(600)
    assert isinstance(_look(ctx), Wait)
    assert ctx.record.stage == Stage.ACTIVATING and _writes(switch, POWER_CYCLE) == 1
    members.advance(BOOT * 2)
    outcome = _look(ctx)
    assert isinstance(outcome, Done), outcome
    assert switch.node.firmware["bmc"] == "88.0002.1139"


def test_no_other_lab_bmc_reads_as_a_switch_tray():
    with LabHall(3, flavours=("gb200_tray", "power_shelf", "dell"), speed=0, seed=5) as hall:
        for bmc in hall.bmcs:
            with lab_client(bmc) as client:
                assert not activation.is_nvlink_switch_tray(client), bmc.flavour
                assert activation.rule_for(client, "bmc") is not Activation.POWER_CYCLE
        session_pool().close_all()
