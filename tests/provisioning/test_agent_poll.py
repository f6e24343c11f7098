"""How often an agent is told to poll: often only when its next command is likely soon."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from provisioning.agents import intervals
from provisioning.agents import link as agent_link
from provisioning.agents.intervals import LIVE_AGENTS, poll_interval
from provisioning.agents.poll_load import LiveAgents
from provisioning.agents.sessions import CheckIn, check_in, poll, seen
from provisioning.core.phases import OUT_OF_BAND_PHASE_NAMES, PHASE_NAMES
from provisioning.models import AgentCommand, AgentSession, Run
from tests.support.scenes import booted_secret, make_run


@pytest.fixture
def polling(settings, node):
    settings.GREENLIGHT_AGENT_POLL_S = 2.0
    settings.GREENLIGHT_AGENT_IDLE_POLL_S = 30.0
    settings.GREENLIGHT_TIME_SCALE = 1.0
    run = make_run(node, phases_done=PHASE_NAMES.index("wait_for_agent"))  # in-band
    claim = CheckIn(node.serial, node.mac_addresses, "b1", "ephemeral", booted_secret(run))
    session, _ = check_in(claim)
    return run, session


def _age(session: AgentSession, seconds: float, now=None) -> None:
    AgentSession.objects.filter(pk=session.pk).update(
        created_at=(now or timezone.now()) - timedelta(seconds=seconds)
    )


def test_short_after_check_in_then_settled(polling, node):
    run, session = polling
    assert poll_interval(node.pk) == 2.0
    _age(session, 600)
    assert poll_interval(node.pk) == 10.0


@pytest.mark.parametrize(
    ("since_s", "told_s"), [(1, 2.0), (4, 2.0), (8, 4.0), (14, 7.0), (30, 10.0)]
)
def test_the_interval_grows_with_the_time_since_the_check_in(
    polling, node, since_s, told_s, monkeypatch
):
    run, session = polling
    now = timezone.now()
    _age(session, since_s, now)
    # Read at the moment the age was set: on a loaded machine a tenth of a second passed between
    # the two, and half of it showed in the interval.
    monkeypatch.setattr(intervals.timezone, "now", lambda: now)
    assert poll_interval(node.pk) == pytest.approx(told_s)


def test_the_polls_of_a_quiet_two_minutes_after_a_check_in_are_few(polling, node):
    """The agent does as told: the count of polls before the next command, if none comes."""
    run, session = polling
    since, polls = 0.0, 0
    while since < 120:
        _age(session, since)
        since += poll_interval(node.pk)
        polls += 1
    # A fixed 2 s would make 60; half the quiet time, from 2 s up to the settled 10 s, makes 16.
    assert polls == 16


def test_an_out_of_band_phase_backs_off_further_and_the_next_phase_polls_short_again(polling, node):
    """The BMC's firmware phases send the agent nothing: it is told to come back less often."""
    run, session = polling
    assert (
        "hgx_firmware" in OUT_OF_BAND_PHASE_NAMES and "nic_firmware" not in OUT_OF_BAND_PHASE_NAMES
    )
    Run.objects.filter(pk=run.pk).update(current_phase="hgx_firmware")
    _age(session, 600)
    assert poll_interval(node.pk) == 60.0  # QUIET_POLL_FACTOR short intervals, not 10
    _age(session, 30)
    # Backing off as in any phase, past the settled 10.
    assert poll_interval(node.pk) == pytest.approx(15.0, abs=0.05)
    Run.objects.filter(pk=run.pk).update(current_phase="nic_firmware")
    _age(session, 600)
    assert poll_interval(node.pk) == 10.0


def test_a_firmware_phase_of_ten_minutes_costs_a_few_polls(polling, node):
    run, session = polling
    Run.objects.filter(pk=run.pk).update(current_phase="bmc_firmware")
    since, polls = 0.0, 0
    while since < 600:
        _age(session, since)
        since += poll_interval(node.pk)
        polls += 1
    # At the settled 10 s it was 68 (16 to get there, then one every 10 s); now 19.
    assert polls == 19


def test_long_while_a_command_runs_and_short_after_it_finishes(polling, node):
    run, session = polling
    _age(session, 600)
    command = agent_link.send(session, run, "secure_erase", "secure_erase", {})
    commands, told = poll(session, set())
    assert [c["id"] for c in commands] == [command.pk]
    assert told == 30.0
    AgentCommand.objects.filter(pk=command.pk).update(status="done", finished_at=timezone.now())
    assert poll_interval(node.pk) == 2.0


def test_idle_without_a_run_and_gone_after_four_missed_polls(polling, node):
    run, session = polling
    run.status = "succeeded"
    run.save(update_fields=["status"])
    _, told = poll(session, set())
    assert told == 30.0
    session.refresh_from_db()
    assert agent_link.is_alive(node) == session
    AgentSession.objects.filter(pk=session.pk).update(
        expected_by=timezone.now() - timedelta(seconds=1)
    )
    assert agent_link.is_alive(node) is None


def test_live_agents_counts_each_session_once_and_forgets_those_gone_quiet():
    now = [1000.0]
    agents = LiveAgents(window_s=120.0, clock=lambda: now[0])
    for session_id in (1, 2, 3, 2, 1):
        agents.saw(session_id)
    assert agents.count() == 3
    now[0] += 100.0
    agents.saw(3)
    assert agents.count() == 3  # all within two minutes
    now[0] += 30.0
    assert agents.count() == 1  # 1 and 2 last polled 130 s ago
    now[0] += 0.5
    agents.saw(4)
    assert agents.count() == 2  # a newcomer counts at once, pruning or not


@pytest.fixture
def fleet_of(settings):
    """Agents polling this process besides the test's own, at a budget of 10 polls a second."""
    settings.GREENLIGHT_AGENT_POLLS_PER_S = 10.0
    LIVE_AGENTS.forget()

    def polled(count: int) -> None:
        for session_id in range(10**6, 10**6 + count):
            LIVE_AGENTS.saw(session_id)

    yield polled
    LIVE_AGENTS.forget()


def test_a_large_fleet_stretches_only_the_intervals_of_agents_that_expect_nothing_soon(
    polling, node, fleet_of
):
    """300 agents at a budget of 10 polls a second: none that expects nothing is told to come
    back sooner than 30 s; one whose next command is likely within seconds still polls short."""
    run, session = polling
    fleet_of(300)
    assert poll_interval(node.pk) == 2.0  # just checked in: its first command is coming
    _age(session, 600)
    assert poll_interval(node.pk) == 30.0  # in band and settled: 10 s without the fleet
    Run.objects.filter(pk=run.pk).update(current_phase="hgx_firmware")
    assert poll_interval(node.pk) == 60.0  # the quiet phase's own interval is longer already
    command = agent_link.send(session, run, "secure_erase", "secure_erase", {})
    fleet_of(450)
    commands, told = poll(session, set())  # this poll counts its own agent too: 451
    assert [c["id"] for c in commands] == [command.pk] and told == pytest.approx(45.1)
    # A fleet past the budget at the longest interval is told that, not longer: liveness and
    # the agents' keep-alive were judged on it (greenlight.W001).
    fleet_of(5000)
    assert poll(session, {command.pk})[1] == intervals.longest_interval_s() == 60.0


def test_a_poll_counts_its_agent_among_the_live_ones(polling, fleet_of):
    run, session = polling
    poll(session, set())
    poll(session, set())
    assert LIVE_AGENTS.count() == 1


def _poll_over_http(client, token, known=()):
    return client.post(
        "/agent/v1/poll",
        json.dumps({"known": list(known)}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


@pytest.fixture
def polling_token(settings, node):
    settings.GREENLIGHT_AGENT_POLL_S = 2.0
    settings.GREENLIGHT_TIME_SCALE = 1.0
    run = make_run(node, phases_done=PHASE_NAMES.index("wait_for_agent"))  # in-band
    claim = CheckIn(node.serial, node.mac_addresses, "b1", "ephemeral", booted_secret(run))
    session, token = check_in(claim)
    return run, session, token


def test_a_poll_with_nothing_to_say_is_one_read(polling_token, client, django_assert_num_queries):
    # Issue 32: a fleet's agents mostly poll with nothing to run; each such poll was seven
    # queries, one of them a write.
    run, session, token = polling_token
    assert _poll_over_http(client, token).status_code == 200  # the first poll writes liveness
    with django_assert_num_queries(1):
        answer = _poll_over_http(client, token)
    assert answer.json() == {"commands": [], "poll_s": 2.0}


def _poll_knowing(client, token, known):
    return _poll_over_http(client, token, known).json()


def test_a_poll_while_its_command_runs_is_one_read(
    polling_token, client, django_assert_num_queries
):
    # Issue 32: at 741 nodes an agent polled 41 times while its commands ran, each poll three
    # queries, one of them to read again the command the agent already had.
    run, session, token = polling_token
    command = agent_link.send(session, run, "secure_erase", "secure_erase", {})
    assert [c["id"] for c in _poll_knowing(client, token, [])["commands"]] == [command.pk]
    with django_assert_num_queries(1):
        answer = _poll_knowing(client, token, [command.pk])
    assert answer == {"commands": [], "poll_s": 30.0}


def test_a_sent_command_the_agent_does_not_know_is_sent_again(polling_token, client):
    # The answer that carried it was lost: the agent lists what it has, and it lacks this one.
    run, session, token = polling_token
    first = agent_link.send(session, run, "secure_erase", "secure_erase", {})
    assert [c["id"] for c in _poll_knowing(client, token, [])["commands"]] == [first.pk]
    assert [c["id"] for c in _poll_knowing(client, token, [])["commands"]] == [first.pk]
    second = agent_link.send(session, run, "secure_erase", "inventory", {})
    polled = _poll_knowing(client, token, [first.pk])["commands"]
    assert [c["id"] for c in polled] == [second.pk], "a queued one is sent"
    assert _poll_knowing(client, token, [first.pk, second.pk])["commands"] == []
    assert [c["id"] for c in _poll_knowing(client, token, [second.pk])["commands"]] == [first.pk]
    assert [c["id"] for c in _poll_knowing(client, token, [first.pk])["commands"]] == [second.pk]


def test_liveness_is_written_every_few_polls_and_never_lets_a_live_agent_lapse(polling_token):
    run, session, _ = polling_token
    writes = 0
    for second in range(0, 60, 2):  # an agent polling every 2 s for a minute
        now = timezone.now() + timedelta(seconds=second)
        session.refresh_from_db()
        assert session.expected_by >= now  # never judged silent while it polls
        writes += poll_session_seen(session, now)
    assert 5 <= writes <= 12  # not thirty


def poll_session_seen(session, now) -> int:
    return int(seen(session, 2.0, now))


def test_a_poll_that_sends_a_command_reads_it_and_says_come_back_later(
    polling_token, client, django_assert_max_num_queries
):
    run, session, token = polling_token
    command = agent_link.send(session, run, "secure_erase", "secure_erase", {})
    with django_assert_max_num_queries(4):  # session, commands, mark sent, liveness
        answer = _poll_over_http(client, token).json()
    assert [c["id"] for c in answer["commands"]] == [command.pk]
    assert answer["poll_s"] == 30.0
    assert AgentCommand.objects.get(pk=command.pk).status == "sent"
