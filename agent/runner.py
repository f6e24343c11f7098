"""The agent itself: check in, serve Greenlight's commands, push results back."""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from . import AGENT_VERSION, protocol
from .commands import COMMANDS, CommandFailed
from .hardware import Hardware, HardwareError
from .httpserver import JsonHttpServer, Request, Response

logger = logging.getLogger("greenlight.agent")
COMMAND_PATH = re.compile(r"^/v1/commands/(\d+)$")


@dataclass
class CommandState:
    id: int
    kind: str
    status: str = "running"
    exit_code: int | None = None
    result: dict[str, Any] = field(default_factory=dict)
    output: list[str] = field(default_factory=list)
    unsent_log: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "exit_code": self.exit_code,
            "result": self.result,
            "output": "\n".join(self.output),
        }


class Agent:
    """One agent for one boot of one node."""

    def __init__(
        self,
        hardware: Hardware,
        greenlight_url: str,
        *,
        environment: str,
        listen_host: str = "0.0.0.0",
        listen_port: int = 9999,
        advertise_host: str | None = None,
        boot_id: str | None = None,
        checkin_retry_s: float = 5.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.hardware = hardware
        self.greenlight_url = greenlight_url.rstrip("/")
        self.environment = environment
        self.boot_id = boot_id or uuid.uuid4().hex
        self.advertise_host = advertise_host or listen_host
        self.checkin_retry_s = checkin_retry_s
        self.server = JsonHttpServer(self.handle, listen_host, listen_port)
        self.http = http or httpx.AsyncClient(timeout=30.0)
        self.token: str | None = None
        self.refused: str | None = None
        self.commands: dict[int, CommandState] = {}
        self.writes = 0  # requests that could change the node (commands); reads are GETs
        self._tasks: set[asyncio.Task] = set()

    @property
    def url(self) -> str:
        return f"http://{self.advertise_host}:{self.server.port}"

    async def start(self) -> None:
        """Serve the API, then check in (retrying until Greenlight answers)."""
        await self.server.start()
        self._spawn(self.check_in())

    async def stop(self) -> None:
        """Stop serving and abandon running commands (the node is going down)."""
        await self.server.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- talking to Greenlight ------------------------------------------------------------

    async def check_in(self) -> None:
        identity = await self.hardware.identity()
        body = {
            **identity,
            "boot_id": self.boot_id,
            "environment": self.environment,
            "agent_url": self.url,
            "version": AGENT_VERSION,
        }
        while self.token is None:
            try:
                answer = await self.http.post(self.greenlight_url + protocol.CHECKIN, json=body)
            except httpx.TransportError as exc:
                logger.warning("check-in failed (%s); retrying", exc)
                await asyncio.sleep(self.checkin_retry_s)
                continue
            if answer.status_code == 200:
                self.token = answer.json()["token"]
                return
            if answer.status_code == 403:
                # Refused for good (unknown node, or this boot already has a token): say why
                # and stop asking; a person or a reboot has to change something first.
                self.refused = answer.json().get("error", "refused")
                logger.error("check-in refused: %s", self.refused)
                return
            await asyncio.sleep(self.checkin_retry_s)

    async def heartbeat(self) -> bool:
        """Re-announce this agent's URL with its token (after a restart of the agent)."""
        answer = await self._post(protocol.HEARTBEAT, {"agent_url": self.url})
        return answer is not None and answer.status_code == 200

    async def _post(self, path: str, body: dict, attempts: int = 5) -> httpx.Response | None:
        for attempt in range(attempts):
            try:
                return await self.http.post(
                    self.greenlight_url + path,
                    json=body,
                    headers={"Authorization": f"Bearer {self.token}"},
                )
            except httpx.TransportError:
                await asyncio.sleep(0.2 * (attempt + 1))
        return None

    # -- serving Greenlight ---------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        if request.method != "GET":
            self.writes += 1
        if not self._authorised(request):
            return Response(403, {"error": "not Greenlight's token for this boot"})
        if request.path == "/v1/ping" and request.method == "GET":
            identity = await self.hardware.identity()
            return Response(
                200,
                {"boot_id": self.boot_id, "environment": self.environment, **identity},
            )
        if request.path == "/v1/inventory" and request.method == "GET":
            # A read: the drift audit uses it and must never cause a command on the node.
            return Response(200, await self.hardware.inventory())
        if request.path == "/v1/commands" and request.method == "POST":
            return self._accept(request.json())
        match = COMMAND_PATH.match(request.path)
        if match and request.method == "GET":
            state = self.commands.get(int(match.group(1)))
            if state is None:
                return Response(404, {"error": "no such command on this boot"})
            return Response(200, state.as_dict())
        return Response(404, {"error": f"no route {request.method} {request.path}"})

    def _authorised(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        return bool(self.token) and hmac.compare_digest(header, f"Bearer {self.token}")

    def _accept(self, body: dict) -> Response:
        command_id, kind = int(body["id"]), body.get("kind", "")
        if command_id in self.commands:
            # Greenlight re-sent a command it lost track of: never run it twice.
            return Response(200, self.commands[command_id].as_dict())
        if kind not in COMMANDS:
            return Response(400, {"error": f"unknown command {kind!r}"})
        state = CommandState(command_id, kind)
        self.commands[command_id] = state
        self._spawn(self._execute(state, body.get("params") or {}))
        return Response(202, {"id": command_id, "status": state.status})

    async def _execute(self, state: CommandState, params: dict) -> None:
        def log(line: str) -> None:
            state.output.append(line)

        try:
            state.result = await COMMANDS[state.kind](self.hardware, self.http, params, log)
            state.status, state.exit_code = "done", 0
        except CommandFailed as exc:
            state.status, state.exit_code, state.result = "failed", 1, exc.result
            log(f"error: {exc}")
        except (HardwareError, OSError, httpx.HTTPError, KeyError, ValueError) as exc:
            state.status, state.exit_code = "failed", 1
            log(f"error: {type(exc).__name__}: {exc}")
        await self._post(protocol.command_result_path(state.id), state.as_dict())
