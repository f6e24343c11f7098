"""The burn-in soak sends its next chunk in the look that judged the last one: no look of its own
between chunks (a step, a waiting event and a queued message each), and the chunk's bounds are
written with its command, so a resumed look never reads one without the other."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from acceptance.choices import Verdict
from acceptance.models import GateResult
from provisioning.agents.sessions import CheckIn, check_in
from provisioning.boot.credentials import arm_for_boot, ephemeral_credential, secret_of
from provisioning.choices import CommandStatus, PhaseStatus, RunStatus, Stage
from provisioning.core.engine import advance
from provisioning.core.phase_state import SoakState
from provisioning.core.runs import start_run
from provisioning.models import AgentCommand, AgentSession, PhaseRecord, Run

pytestmark = pytest.mark.django_db

GATE = "gate:burn_in"


def _samples(start_s: int, end_s: int) -> list[dict]:
    """A healthy GPU's samples every ten minutes of the chunk."""
    gpu = {"gpu": 0, "temp_c": 61, "power_w": 640, "sm_clock_mhz": 1980}
    return [{"t": t, "gpus": [gpu]} for t in range(start_s + 600, end_s + 1, 600)]


@pytest.fixture
def soaking(node, manifest, profile):
    """A run in its burn-in with its agent checked in, the first chunk's result just in."""
    run = start_run(node)
    boot_secret = secret_of(ephemeral_credential(run))
    arm_for_boot(node.pk)  # Greenlight booted the node into its ephemeral image
    session, _ = check_in(
        CheckIn(node.serial, node.mac_addresses, "boot-soak", "ephemeral", boot_secret)
    )
    record = run.phases.get(phase=GATE)
    run.phases.filter(order__lt=record.order).update(status=PhaseStatus.DONE)
    first = AgentCommand.objects.create(
        node=node, run=run, session=session, phase=GATE, kind="run_tools",
        status=CommandStatus.DONE,
        result={"outputs": {"soak": json.dumps(_samples(0, 43200)), "xid": ""}},
    )  # fmt: skip
    now = timezone.now()
    PhaseRecord.objects.filter(pk=record.pk).update(
        status=PhaseStatus.WAITING, stage=Stage.SOAKING, command=first, started_at=now,
        stage_started_at=now, deadline_at=now + timedelta(hours=200),
        resume=SoakState(0, 43200, 259200).as_json(),
    )  # fmt: skip
    Run.objects.filter(pk=run.pk).update(status=RunStatus.WAITING, next_look_at=now)
    run.refresh_from_db()
    return run, first


def test_the_look_that_judges_a_chunk_sends_the_next(soaking):
    run, first = soaking
    advance(run.pk, run.step)

    record = PhaseRecord.objects.get(run=run, phase=GATE)
    assert record.stage == Stage.SOAKING and record.command_id != first.pk
    # The 72 h profile's soak in six chunks of 12 h: the second starts where the first ended.
    assert SoakState.of(record.resume) == SoakState(43200, 86400, 259200)
    (soak, xid) = record.command.params["tools"]
    assert (soak["start_s"], soak["duration_s"], xid["soak_s"]) == (43200, 43200, 86400)
    assert record.command.status == CommandStatus.QUEUED
    assert GateResult.objects.get(run=run, gate="burn_in").verdict == Verdict.RUNNING
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.wait_reason.startswith("agent running")
    assert run.step == 1  # one look: judged and sent


def test_a_chunk_judged_again_after_a_lost_send_sends_it_once_more(soaking):
    # No agent to take the next chunk (its boot ended): the record keeps the judged chunk, so
    # the look after the agent is back judges it again and sends the next one then.
    run, first = soaking
    AgentSession.objects.filter(pk=first.session_id).update(revoked_at=timezone.now())
    advance(run.pk, run.step)

    record = PhaseRecord.objects.get(run=run, phase=GATE)
    assert record.command_id == first.pk
    assert SoakState.of(record.resume) == SoakState(0, 43200, 259200)
    assert not AgentCommand.objects.filter(run=run).exclude(pk=first.pk).exists()
