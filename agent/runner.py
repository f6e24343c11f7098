"""The agent itself: check in with the boot credential, pull commands, push results back.

The agent opens every connection itself (check-in, poll, log, result); nothing listens on the
node. Greenlight answers each poll with the commands queued for this boot and says when to ask
again.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from . import AGENT_VERSION, protocol
from .commands import COMMANDS, CommandFailed
from .hardware import Hardware, HardwareError

logger = logging.getLogger("greenlight.agent")

# Statuses after which Greenlight will never accept this boot's token again.
TOKEN_REFUSED = (401, 403)
# Connections are kept between polls (protocol.KEEPALIVE_S says how long and why); httpx's own
# default is 5 s, so every poll after a longer pause (30 s while a command runs or no run is
# open, up to a minute in a long firmware phase) set up TCP and TLS again.
KEEPALIVE_S = protocol.KEEPALIVE_S
LIMITS = httpx.Limits(keepalive_expiry=KEEPALIVE_S)


def http_client(**kwargs: Any) -> httpx.AsyncClient:
    """The agent's HTTP client: a 30 s timeout, and connections kept between polls."""
    return httpx.AsyncClient(timeout=30.0, limits=LIMITS, **kwargs)


@dataclass
class CommandState:
    id: int
    kind: str
    status: str = "running"
    exit_code: int | None = None
    result: dict[str, Any] = field(default_factory=dict)
    output: list[str] = field(default_factory=list)
    inventory: dict[str, Any] | None = None
    reported: bool = False

    def as_dict(self) -> dict[str, Any]:
        body = {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "exit_code": self.exit_code,
            "result": self.result,
            "output": "\n".join(self.output)[-protocol.MAX_OUTPUT_CHARS :],
        }
        if self.inventory is not None:
            body["inventory"] = self.inventory
        return body


class Agent:
    """One agent for one boot of one node."""

    def __init__(
        self,
        hardware: Hardware,
        greenlight_url: str,
        *,
        environment: str,
        credential: str,
        boot_id: str | None = None,
        checkin_retry_s: float = 5.0,
        poll_s: float = 2.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.hardware = hardware
        self.greenlight_url = greenlight_url.rstrip("/")
        self.environment = environment
        self.credential = credential
        self.boot_id = boot_id or uuid.uuid4().hex
        self.checkin_retry_s = checkin_retry_s
        self.poll_s = poll_s
        self.http = http or http_client()
        self.token: str | None = None
        self.refused: str | None = None
        self.commands: dict[int, CommandState] = {}
        self.polls = 0
        self._poll_soon = asyncio.Event()
        # Seconds after a reported result before the next poll: its answer's poll_s.
        self._after_result_s = 0.0
        self._tasks: set[asyncio.Task] = set()
        self._loop_task: asyncio.Task | None = None

    async def start(self) -> None:
        """Check in (retrying until Greenlight answers), then poll for commands."""
        self._loop_task = self._spawn(self._serve())

    async def stop(self) -> None:
        """Stop polling and abandon running commands (the node is going down)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def pause_polling(self) -> None:
        """Stop asking for commands (the process died); running commands carry on."""
        if self._loop_task is not None:
            self._loop_task.cancel()
            self._loop_task = None

    def resume_polling(self) -> None:
        """Ask for commands again with the same token (the process was restarted)."""
        if self._loop_task is None and self.token is not None:
            self._loop_task = self._spawn(self._poll_loop())

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _serve(self) -> None:
        await self.check_in()
        if self.token is not None:
            # No command can wait for a boot that has just checked in: Greenlight sends the
            # first once its run has looked at the check-in, which the answer's poll_s allows.
            await asyncio.sleep(self.poll_s)
            await self._poll_loop()

    # -- check-in ---------------------------------------------------------------------------

    async def check_in(self) -> None:
        """Present the boot credential; keep trying until Greenlight answers yes or no."""
        body = {
            **await self.hardware.identity(),
            "boot_id": self.boot_id,
            "environment": self.environment,
            "credential": self.credential,
            "version": AGENT_VERSION,
            "inventory": await self._inventory(),
        }
        while self.token is None:
            try:
                answer = await self.http.post(self.greenlight_url + protocol.CHECKIN, json=body)
            except httpx.TransportError as exc:
                logger.warning("check-in failed (%s); retrying", exc)
                await asyncio.sleep(self.checkin_retry_s)
                continue
            if answer.status_code == 200:
                reply = answer.json()
                self.token = reply["token"]
                self.poll_s = float(reply.get("poll_s") or self.poll_s)
                logger.info("checked in as node %s, boot %s", reply.get("node_id"), self.boot_id)
                return
            if answer.status_code == 403:
                # Refused for good (no valid credential, or this boot already has a token):
                # say why and stop; a person or a new boot medium has to change something.
                self.refused = _error_of(answer)
                logger.error("check-in refused: %s", self.refused)
                return
            logger.warning("check-in answered %s; retrying", answer.status_code)
            await asyncio.sleep(self.checkin_retry_s)

    async def _inventory(self) -> dict[str, Any]:
        try:
            return await self.hardware.inventory()
        except (HardwareError, OSError, ValueError) as exc:
            logger.warning("inventory failed: %s", exc)
            return {}

    # -- pulling commands -------------------------------------------------------------------

    async def _poll_loop(self) -> None:
        while True:
            delay = await self.poll_once()
            if delay is None:
                return
            await self._until_next_poll(delay)

    async def _until_next_poll(self, delay: float) -> None:
        """Wait `delay`, or less once a result is reported: the next command usually follows
        it, once Greenlight has looked at the result, which the result's answer says to allow.
        Asked at once, the poll found nothing (one wasted poll for every result)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        while True:
            self._poll_soon.clear()
            try:
                await asyncio.wait_for(self._poll_soon.wait(), max(deadline - loop.time(), 0))
            except TimeoutError:
                return
            deadline = min(deadline, loop.time() + self._after_result_s)

    async def poll_once(self) -> float | None:
        """Report what is unreported, ask for commands, start them; the seconds to the next
        poll, or None once the token is refused for good."""
        await self._report_pending()
        answer = await self._post(protocol.POLL, {"known": sorted(self.commands)}, attempts=1)
        if answer is None:
            return self.poll_s
        if answer.status_code in TOKEN_REFUSED:
            self.refused = _error_of(answer)
            logger.error("Greenlight refused this boot's token: %s", self.refused)
            return None
        if answer.status_code != 200:
            return self.poll_s
        self.polls += 1
        reply = answer.json()
        for command in reply.get("commands") or []:
            self._accept(command)
        return float(reply.get("poll_s") or self.poll_s)

    def _accept(self, command: dict[str, Any]) -> None:
        command_id, kind = int(command["id"]), str(command.get("kind", ""))
        if command_id in self.commands:
            return  # Greenlight re-sent a command it lost track of: never run it twice
        state = CommandState(command_id, kind)
        self.commands[command_id] = state
        if kind not in COMMANDS:
            state.status, state.exit_code = "failed", 1
            state.output.append(f"error: this agent ({AGENT_VERSION}) has no command {kind!r}")
            self._spawn(self._report(state))
            return
        self._spawn(self._execute(state, command.get("params") or {}))

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
        if state.kind in protocol.CHANGES_INVENTORY:
            state.inventory = await self._inventory()
        await self._report(state)

    async def _report(self, state: CommandState) -> None:
        answer = await self._post(protocol.command_result_path(state.id), state.as_dict())
        # A 4xx means Greenlight will never take it (the command was closed or is not ours).
        state.reported = answer is not None and answer.status_code < 500
        self._after_result_s = _poll_s_of(answer)
        self._poll_soon.set()  # the next command usually follows a result

    async def _report_pending(self) -> None:
        for state in list(self.commands.values()):
            if state.status != "running" and not state.reported:
                await self._report(state)

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


def _error_of(answer: httpx.Response) -> str:
    try:
        return str(answer.json().get("error", "refused"))
    except ValueError:
        return f"HTTP {answer.status_code}"


def _poll_s_of(answer: httpx.Response | None) -> float:
    """The poll_s an answer gives, or 0 (ask at once) when it gives none that can be read."""
    if answer is None or answer.status_code != 200:
        return 0.0
    try:
        return max(float(answer.json().get("poll_s") or 0.0), 0.0)
    except (ValueError, TypeError, AttributeError):
        return 0.0
