"""Each agent gets its own small HTTP client, kept between steps, and their number is bounded.

One pool for every agent made httpcore scan hundreds of connections on each request.
"""

from __future__ import annotations

import pytest

from provisioning import agent_link


@pytest.fixture
def fresh_clients(monkeypatch):
    monkeypatch.setattr(agent_link, "_clients", type(agent_link._clients)())
    monkeypatch.setattr(agent_link, "MAX_AGENT_CLIENTS", 2)
    yield agent_link._clients
    for client in agent_link._clients.values():
        client.close()


def test_one_client_per_agent_kept_between_calls(fresh_clients):
    first = agent_link.agent_http("http://127.0.9.1:4000")
    assert agent_link.agent_http("http://127.0.9.1:4000/v1/ping") is first
    assert agent_link.agent_http("http://127.0.9.2:4000") is not first


def test_the_least_recently_used_client_is_closed_past_the_cap(fresh_clients):
    a = agent_link.agent_http("http://127.0.9.1:4000")
    b = agent_link.agent_http("http://127.0.9.2:4000")
    assert agent_link.agent_http("http://127.0.9.1:4000") is a  # a is now the most recent
    agent_link.agent_http("http://127.0.9.3:4000")
    assert b.is_closed and not a.is_closed
    assert list(fresh_clients) == ["http://127.0.9.1:4000", "http://127.0.9.3:4000"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_result_that_beats_the_sent_mark_is_what_send_returns(node):
    """The agent pushes its result while Greenlight is still marking the command sent."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from django.db import connection

    from provisioning.choices import CommandStatus
    from provisioning.models import AgentCommand, AgentSession

    class FastAgent(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                command = AgentCommand.objects.get(pk=body["id"])
                agent_link.store_result(command, {"status": "done", "exit_code": 0})
            finally:
                connection.close()
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), FastAgent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        session = AgentSession.objects.create(
            node=node, boot_id="b1", environment="ephemeral", token_hash="t1",
            agent_url=f"http://127.0.0.1:{server.server_address[1]}",
        )  # fmt: skip
        command = agent_link.send(session, None, "gate:gpu_health", "run_tools", {})
    finally:
        server.shutdown()
        server.server_close()
    assert command.status == CommandStatus.DONE and command.exit_code == 0
    assert AgentCommand.objects.get(pk=command.pk).status == CommandStatus.DONE
