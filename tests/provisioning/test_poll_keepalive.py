"""An agent keeps its connection to the node plane between polls (agent/protocol.py KEEPALIVE_S),
for longer than any interval Greenlight tells it and shorter than the node plane keeps it: a
poll that came later than its keep-alive (a long firmware phase's settled polls, a minute apart
on a real clock) connected, TCP and TLS, again every time."""

from __future__ import annotations

import pytest
from django.core import checks

from agent.protocol import KEEPALIVE_S
from greenlight import node_gunicorn
from provisioning.agents import intervals

# What a poll reads in a run's out-of-band firmware phase, long after the boot's check-in.
QUIET_SETTLED = {
    "run_phase": "hgx_firmware",
    "rack_run_open": False,
    "command_running": False,
    "boot_at": None,
    "command_finished_at": None,
}
COMMAND_RUNNING = {**QUIET_SETTLED, "run_phase": "gate:burn_in", "command_running": True}
NO_RUN = {**QUIET_SETTLED, "run_phase": None}


@pytest.mark.parametrize("facts", [QUIET_SETTLED, COMMAND_RUNNING, NO_RUN])
def test_every_interval_told_on_a_real_clock_is_under_the_agents_keep_alive(settings, facts):
    settings.GREENLIGHT_TIME_SCALE = 1.0
    told = intervals.interval(facts)
    assert told <= intervals.longest_interval_s() < KEEPALIVE_S


def test_the_node_plane_keeps_a_connection_longer_than_the_agent():
    assert node_gunicorn.keepalive > KEEPALIVE_S


def test_intervals_set_past_the_keep_alive_are_warned_of(settings):
    assert "greenlight.W001" not in [m.id for m in checks.run_checks()]
    settings.GREENLIGHT_AGENT_IDLE_POLL_S = 120.0
    warned = [m for m in checks.run_checks() if m.id == "greenlight.W001"]
    assert (
        warned
        and "120 s apart" in warned[0].msg
        and "GREENLIGHT_AGENT_IDLE_POLL_S" in (warned[0].hint)
    )
    settings.GREENLIGHT_AGENT_IDLE_POLL_S = 30.0
    settings.GREENLIGHT_AGENT_POLL_S = 4.0  # a quiet phase's settled polls two minutes apart
    assert "greenlight.W001" in [m.id for m in checks.run_checks()]
