"""An agent's session ends with its run (succeeded, aborted) and with the node's move out of the
states that need its agent: the token then answers 401. A failed run, which a person may retry
from its failed phase, keeps its agent; an in-service node's host-OS agent keeps its session."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from fleet.choices import NodeState
from fleet.lifecycle import transition
from fleet.models import Node
from provisioning.agents.sessions import CheckIn, check_in
from provisioning.boot.credentials import arm_for_boot, mint_host_credential
from provisioning.core.completion import complete_run
from provisioning.core.engine import fail_run
from provisioning.core.runs import abort_run
from provisioning.models import AgentSession, Run
from tests.factories import make_node
from tests.support.scenes import booted_secret, make_run

pytestmark = pytest.mark.django_db


def _poll(token: str):
    return Client().post(
        "/agent/v1/poll",
        json.dumps({"known": []}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def _put(node: Node, state: str) -> None:
    # Set-up only: put the node where the run would have it.
    Node.objects.filter(pk=node.pk).update(state=state)
    node.refresh_from_db()


def _ephemeral_agent(node: Node, run: Run) -> str:
    claim = CheckIn(node.serial, node.mac_addresses, "boot-1", "ephemeral", booted_secret(run))
    _, token = check_in(claim)
    assert _poll(token).status_code == 200
    return token


def _abort(run: Run, bob) -> None:
    abort_run(run, actor=bob, reason="wrong rack")


def _fail(run: Run, bob) -> None:
    fail_run(run, run.phases.get(phase=run.current_phase), "BMC unreachable")


def _succeed(run: Run, bob) -> None:
    run.phases.update(status="done")
    _put(run.node, NodeState.VALIDATING)
    complete_run(run)


@pytest.mark.parametrize("end", [_abort, _succeed], ids=["aborted", "succeeded"])
def test_the_ephemeral_token_answers_401_once_its_run_ended(rack, bob, end):
    node = make_node(rack=rack)
    _put(node, NodeState.PROVISIONING)
    run = make_run(node, phases_done=2)
    token = _ephemeral_agent(node, run)

    end(run, bob)

    answer = _poll(token)
    assert answer.status_code == 401, answer.content
    assert answer["WWW-Authenticate"].startswith("Bearer")
    assert "finished run" in answer.json()["error"]
    assert AgentSession.objects.get(node=node).revoked_at is not None


def test_a_failed_run_keeps_its_agent_for_a_retry_from_the_failed_phase(rack, bob):
    node = make_node(rack=rack)
    _put(node, NodeState.PROVISIONING)
    run = make_run(node, phases_done=2)
    token = _ephemeral_agent(node, run)

    _fail(run, bob)

    assert _poll(token).status_code == 200
    assert AgentSession.objects.get(node=node).revoked_at is None


def test_a_move_out_of_the_agents_states_ends_its_session_without_a_run_ending(rack, bob):
    node = make_node(rack=rack)
    _put(node, NodeState.PROVISIONING)
    run = make_run(node, phases_done=2)
    token = _ephemeral_agent(node, run)
    Run.objects.filter(pk=run.pk).update(status="succeeded")  # the run is out of the picture

    transition(node, NodeState.DECOMMISSIONED, actor=bob, reason="left the hall")

    assert _poll(token).status_code == 401


def test_an_in_service_nodes_host_os_session_outlives_its_moves(rack, bob):
    node = make_node(rack=rack)
    _put(node, NodeState.IN_SERVICE)
    _, secret = mint_host_credential(node, None)
    arm_for_boot(node.pk)
    _, token = check_in(CheckIn(node.serial, node.mac_addresses, "boot-os", "host_os", secret))
    assert _poll(token).status_code == 200

    transition(node, NodeState.QUARANTINED, actor=bob, reason="ECC storm")

    assert _poll(token).status_code == 200
    transition(node, NodeState.DECOMMISSIONED, actor=bob, reason="left the hall")
    assert _poll(token).status_code == 401
