"""A lab node's boot dies with the power that ran it, as a real node's does: a boot still fetching
its iPXE script when the node is reset starts no agent (a database failover held the fetch open
for seconds, and the dead boot's agent then checked in beside the next boot's and contested its
credential). A network boot that gets no script starts no agent either.

Greenlight's boot plane is stood in for by a server that holds each iPXE answer until the test
lets it go: the fault is a slow answer at an exact moment, which a real server cannot be made to
give. Where a real answer does, the real boot plane gives it (live_server).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from django.core.signals import request_started

from lab.agents import LabAgents
from lab.hall import LabHall
from lab.node import BOOT_SECONDS, POWER_OFF_SECONDS


class HeldBootPlane:
    """Answers each iPXE fetch only once released; records every check-in's boot and refuses
    it (the agent then stops)."""

    def __init__(self) -> None:
        self.fetches = 0
        self.checkins: list[str] = []
        self.release = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def _ipxe(self, request: web.Request) -> web.Response:
        self.fetches += 1
        await self.release.wait()
        return web.Response(text="#!ipxe\nkernel vmlinuz greenlight.credential=s3cret\nboot\n")

    async def _checkin(self, request: web.Request) -> web.Response:
        self.checkins.append((await request.json())["boot_id"])
        return web.json_response({"error": "refused by the test"}, status=403)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/boot/v1/ipxe", self._ipxe)
        app.router.add_post("/agent/v1/checkin", self._checkin)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"


def _until(check, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def hall():
    with LabHall(1, flavours=("dell",), speed=0, seed=3) as hall:
        yield hall


def _on_hall_loop(hall: LabHall, coro):
    assert hall._loop is not None
    return asyncio.run_coroutine_threadsafe(coro, hall._loop).result(timeout=10)


@pytest.fixture
def lab(hall):
    """The hall's agents against a held boot plane; the node is on, its boot's fetch held."""
    plane = HeldBootPlane()
    _on_hall_loop(hall, plane.start())
    agents = LabAgents(hall, plane.url)
    node = hall.node(0)
    try:
        node.reset("On", hall.clock.now())
        hall.advance(BOOT_SECONDS)
        _until(lambda: plane.fetches == 1, "the power-on boot's iPXE fetch")
        yield plane, agents, node
    finally:
        agents.stop_all()
        _on_hall_loop(hall, plane.runner.cleanup())


def _release(hall, plane) -> None:
    """Answer every held fetch, and give a dead boot's agent every chance to come."""
    hall._loop.call_soon_threadsafe(plane.release.set)
    time.sleep(0.5)


def test_a_boot_reset_while_fetching_its_ipxe_script_starts_no_agent(hall, lab):
    plane, agents, node = lab
    # Reset while that fetch is held: the power-on boot is gone, a new one fetches.
    assert node.reset("ForceRestart", hall.clock.now()) == ""
    hall.advance(POWER_OFF_SECONDS + BOOT_SECONDS)
    _until(lambda: plane.fetches == 2, "the restarted boot's iPXE fetch")

    _release(hall, plane)
    _until(lambda: plane.checkins, "the restarted boot's check-in")
    assert len(plane.checkins) == 1
    assert agents.checkins[node.serial] == 1
    assert node.boot_count == 2


def test_a_node_powered_off_while_fetching_starts_no_agent(hall, lab):
    plane, agents, node = lab
    node.reset("ForceOff", hall.clock.now())
    hall.advance(POWER_OFF_SECONDS)
    _until(lambda: node.power == "Off", "the node to power off")

    _release(hall, plane)
    assert plane.checkins == []
    assert node.serial not in agents.agents


def test_a_boot_fetching_when_the_lab_stops_starts_no_agent(hall, lab):
    plane, agents, node = lab
    agents.stop_all()

    _release(hall, plane)
    assert plane.checkins == []
    assert node.serial not in agents.agents


# serialized_rollback, as every transactional test here: the flush after one without it lets the
# content types come back under new ids, and the next test that restores the database collides.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_network_boot_without_an_ipxe_script_starts_no_agent(hall, live_server):
    # Greenlight's own boot plane, which has no script for a MAC it never armed: a real node's
    # firmware then has nothing to boot, so nothing may check in with an empty credential.
    paths: list[str] = []

    def seen(sender, environ, **kwargs):
        paths.append(environ["PATH_INFO"])

    request_started.connect(seen, weak=False)
    agents = LabAgents(hall, live_server.url)
    node = hall.node(0)
    try:
        node.reset("On", hall.clock.now())
        hall.advance(BOOT_SECONDS)
        _until(lambda: "/boot/v1/ipxe" in paths, "the power-on boot's iPXE fetch")
        time.sleep(0.5)  # an agent started anyway checks in at once
        assert "/agent/v1/checkin" not in paths
        assert node.serial not in agents.agents
    finally:
        request_started.disconnect(seen)
        agents.stop_all()
