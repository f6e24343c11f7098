"""Every Redfish request says who sent it (issue 33): a hall's BMC log names the worker and its
site; a process that is no worker names its host."""

from __future__ import annotations

import socket

from common import user_agent
from common.user_agent import name_this_worker

from .conftest import lab_client


def test_requests_name_the_worker_and_its_site_or_else_the_host(hall, monkeypatch):
    monkeypatch.setattr(user_agent, "_user_agent", "")  # put back after the test
    bmc = hall.bmc(0)
    with lab_client(bmc) as client:
        client.system_info()
    assert set(bmc.node.origins) == {f"Greenlight/1 (host={socket.gethostname()})"}

    bmc.node.origins.clear()
    # A site's name is an operator's text: what would end the comment early is replaced.
    name_this_worker("w1@hall-b", "berlin (b)")
    with lab_client(bmc) as client:
        client.system_info()
    assert set(bmc.node.origins) == {"Greenlight/1 (site=berlin _b_; worker=w1@hall-b)"}
    name_this_worker("central-1@ctl")
    assert user_agent.user_agent() == "Greenlight/1 (worker=central-1@ctl)"
