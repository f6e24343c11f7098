"""LabSite: a hall of BMCs, the agents inside its nodes, and the artifact server, as one thing."""

from __future__ import annotations

import asyncio
import socket

from aiohttp import web

from .agents import LabAgents, agent_address
from .artifacts import ArtifactServer
from .hall import LabHall


class LabSite:
    """Start with the Greenlight URL the agents check in with; stop tears everything down."""

    def __init__(self, hall: LabHall, greenlight_url: str, *, artifact_port: int = 0):
        self.hall = hall
        self.greenlight_url = greenlight_url
        self.artifact_port = artifact_port
        self.artifacts = ArtifactServer({})
        self.agents: LabAgents | None = None
        self._runner: web.AppRunner | None = None

    @property
    def artifact_url(self) -> str:
        return f"http://127.0.0.1:{self.artifact_port}"

    def __enter__(self) -> LabSite:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        self.hall.start()
        self.artifacts.nodes_by_address = {
            agent_address(node.index): node for node in self.hall.nodes
        }
        future = asyncio.run_coroutine_threadsafe(self._start_artifacts(), self.hall._loop)
        future.result(timeout=10)
        self.agents = LabAgents(self.hall, self.greenlight_url)

    async def _start_artifacts(self) -> None:
        self._runner = web.AppRunner(self.artifacts.application(), access_log=None)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.artifact_port))
        self.artifact_port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    def stop(self) -> None:
        if self.agents is not None:
            self.agents.stop_all()
        if self._runner is not None and self.hall._loop is not None:
            future = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.hall._loop)
            future.result(timeout=10)
            self._runner = None
        self.hall.stop()
