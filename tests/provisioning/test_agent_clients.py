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
