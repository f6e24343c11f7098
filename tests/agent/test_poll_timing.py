"""When the agent asks for its next command: not at once after a check-in or a result, whose
next command Greenlight sends only once its run has looked at them, but after the interval the
answer gave. Asked at once, the poll found nothing: one wasted poll per boot and per result, about
a third of an agent's polls in a lab run.

Greenlight's answers are scripted here (the agent's own timing is under test); the live exchange
runs in every lab pipeline test, and the benchmark counts its polls.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from agent import protocol
from agent.hardware import Hardware
from agent.runner import Agent, _poll_s_of

CHECKIN_POLL_S = 0.2
RESULT_POLL_S = 0.3
STANDING_POLL_S = 5.0


class NoHardware(Hardware):
    """A node with nothing to report: the commands it gets are ones this agent lacks."""

    async def identity(self) -> dict[str, Any]:
        return {"serial": "SN-TIMING", "mac_addresses": []}

    async def inventory(self) -> dict[str, Any]:
        return {}


NoHardware.__abstractmethods__ = frozenset()


def _greenlight(seen: list[tuple[str, float]]) -> httpx.MockTransport:
    polls = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal polls
        path = request.url.path
        seen.append((path, asyncio.get_running_loop().time()))
        if path == protocol.CHECKIN:
            return httpx.Response(200, json={"token": "t", "node_id": 1, "poll_s": CHECKIN_POLL_S})
        if path == protocol.POLL:
            polls += 1
            # The first poll gets a command this agent lacks: it fails it and reports at once.
            commands = [{"id": 7, "kind": "no-such-command", "params": {}}] if polls == 1 else []
            return httpx.Response(200, json={"commands": commands, "poll_s": STANDING_POLL_S})
        return httpx.Response(200, json={"ok": True, "poll_s": RESULT_POLL_S})

    return httpx.MockTransport(answer)


def _exchange() -> list[tuple[str, float]]:
    seen: list[tuple[str, float]] = []

    async def go() -> None:
        async with httpx.AsyncClient(transport=_greenlight(seen)) as http:
            agent = Agent(
                NoHardware(),
                "http://greenlight",
                environment="ephemeral",
                credential="c",
                http=http,
            )
            await agent.start()
            await asyncio.sleep(1.2)
            await agent.stop()

    asyncio.run(go())
    return seen


def test_the_agent_polls_after_the_interval_its_check_in_and_result_answers_gave():
    seen = _exchange()
    paths = [path for path, _ in seen]
    result = protocol.command_result_path(7)
    assert paths == [protocol.CHECKIN, protocol.POLL, result, protocol.POLL], paths
    at = dict(zip(["checkin", "poll", "result", "next poll"], [t for _, t in seen], strict=True))
    assert at["poll"] - at["checkin"] >= CHECKIN_POLL_S
    # Asked after the result's interval, well before the standing one.
    assert RESULT_POLL_S <= at["next poll"] - at["result"] < STANDING_POLL_S / 2


def test_a_result_whose_answer_gives_no_interval_is_followed_by_a_poll_at_once():
    # An answer without a readable poll_s (an older Greenlight, a proxy's error page): at once.
    assert _poll_s_of(httpx.Response(200, json={"ok": True})) == 0.0
    assert _poll_s_of(httpx.Response(200, text="<html>")) == 0.0
    assert _poll_s_of(httpx.Response(503, json={"poll_s": 9})) == 0.0
    assert _poll_s_of(None) == 0.0
    assert _poll_s_of(httpx.Response(200, json={"poll_s": 0.5})) == 0.5
