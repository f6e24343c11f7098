"""The rack-wide gate's rows and looks (issue 34), on a DB-built NVL72 whose trays' agents answer
with the reports of tests/acceptance/rack_samples.py (built from real captures): each compute tray
is asked once, on a host-OS session that booted after its power cycle; a lost command is asked
again; the verdict is written once every tray answered and the shelves were read, or at the
deadline, where a tray that never answered is unknown and the rack never passes with it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from acceptance.choices import Verdict
from acceptance.models import AcceptanceProfile
from acceptance.rack_gate import MAX_ATTEMPTS, MNDIAG_TOOL, PHASE, RACK_GATE_TOOLS, look
from acceptance.rack_models import RackTrayReport, RackVerdict
from acceptance.rack_status import FabricWord, fabric_status
from fleet.choices import NodeKind
from fleet.models import Manifest
from provisioning.agents.link import store_result
from provisioning.choices import CommandStatus
from provisioning.models import AgentCommand, AgentSession
from provisioning.rack_models import RackRun
from tests import factories

from . import rack_samples as rs
from .sample_files import read

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


@pytest.fixture
def rack():
    system, members = factories.make_nvl72_rack()
    rack_run = RackRun.objects.create(
        rack=system.rack, manifest=Manifest.current_for(system.sku), stage_index=4
    )
    return rack_run, members


def boot(node, at=T0, name="b1") -> AgentSession:
    return AgentSession.objects.create(
        node=node, boot_id=f"{name}-{node.pk}", environment="host_os",
        token_hash=f"{name}-{node.pk}", created_at=at, expected_by=datetime.max.replace(tzinfo=UTC),
    )  # fmt: skip


def answer(command: AgentCommand, number: int, overrides: dict | None = None) -> None:
    """The tray's agent returns its tools' outputs (rack_samples' tray `number`)."""
    outputs = {
        "nvidia-smi": rs.smi_report(number),
        "imex": rs.imex_report(),
        "nvlink": rs.nvlink_report(number),
        "host-addresses": f"10.0.0.{number} {rs.imex_addresses()[number]} \n",
        "hostname": f"gb200-r07-c{number + 1:02d}\n",
        **(overrides or {}),
    }
    store_result(command, {"status": "done", "exit_code": 0, "result": {"outputs": outputs}})


def shelves_read(rack_run, members, power_state="On") -> None:
    """What the site's worker writes once it read the shelves' BMCs (observe_shelves)."""
    seen = [{"node": s.pk, "serial": s.serial, "member_index": s.member_index,
             "power_state": power_state, "health": "OK"} for s in members["power_shelf"]]  # fmt: skip
    RackVerdict.objects.filter(rack_run=rack_run).update(shelves=seen)


def test_each_tray_is_asked_once_then_the_rack_is_judged_on_every_answer(rack):
    rack_run, members = rack
    trays = members[NodeKind.COMPUTE_TRAY]
    for tray in trays:
        boot(tray)
    waiting = look(rack_run, T0)
    assert waiting.passed is None
    assert waiting.reason == (
        "waiting for 18 of 18 compute trays' reports and the power shelves' BMCs"
    )
    commands = list(AgentCommand.objects.filter(phase=PHASE).order_by("node__member_index"))
    assert [c.node_id for c in commands] == [t.pk for t in trays]
    assert {c.run_id for c in commands} == {None}
    assert [t["tool"] for t in commands[0].params["tools"]] == list(RACK_GATE_TOOLS)
    look(rack_run, T0)
    assert AgentCommand.objects.filter(phase=PHASE).count() == 18  # asked once each

    for number, command in enumerate(commands):
        answer(command, number)
    assert look(rack_run, T0).reason == "waiting for the power shelves' BMCs"
    shelves_read(rack_run, members)
    passed = look(rack_run, T0)
    assert passed.passed is True, passed.reason
    assert passed.reason.startswith("72 GPUs of 18 compute trays in clique 4026 of cluster")
    assert "mndiag" not in passed.reason  # the rack's SKU has no profile asking for it
    assert RackVerdict.objects.get(rack_run=rack_run).mndiag_command is None
    verdict = RackVerdict.objects.get(rack_run=rack_run)
    assert (verdict.verdict, verdict.judged_at) == (Verdict.PASS, T0)
    assert look(rack_run, T0 + timedelta(hours=1)) == passed  # written once


def test_a_gpu_in_another_clique_fails_the_rack_naming_it(rack):
    rack_run, members = rack
    trays = members[NodeKind.COMPUTE_TRAY]
    for tray in trays:
        boot(tray)
    look(rack_run, T0)
    other = {"nvidia-smi": rs.smi_report(6, {2: {"CliqueId": "4027"}})}
    for number, command in enumerate(AgentCommand.objects.filter(phase=PHASE).order_by("pk")):
        answer(command, number, other if number == 6 else None)
    shelves_read(rack_run, members)
    failed = look(rack_run, T0)
    assert failed.passed is False
    assert failed.reason.startswith(f"tray c07 (serial {trays[6].serial}) GPU 2 ")
    assert "in clique 4027; the domain is clique 4026" in failed.reason


def test_a_tray_that_never_answers_is_unknown_at_the_deadline(rack):
    rack_run, members = rack
    trays = members[NodeKind.COMPUTE_TRAY]
    for tray in trays[:-1]:
        boot(tray)
    look(rack_run, T0)
    for number, command in enumerate(AgentCommand.objects.filter(phase=PHASE).order_by("pk")):
        answer(command, number)
    shelves_read(rack_run, members)
    assert look(rack_run, T0 + timedelta(minutes=29)).passed is None  # tray 18 may still boot
    late = look(rack_run, T0 + timedelta(minutes=31))
    assert late.passed is False
    verdict = RackVerdict.objects.get(rack_run=rack_run)
    assert verdict.verdict == Verdict.ERROR  # only unknowns: never a pass
    assert f"tray c18 (serial {trays[-1].serial}): reported nothing" in verdict.summary


def test_a_lost_command_is_asked_again_and_an_old_boot_is_not_asked(rack):
    rack_run, members = rack
    tray = members[NodeKind.COMPUTE_TRAY][0]
    # The tray was power-cycled by this rack run after its old boot: wait for the new one.
    cycle = rack_run.stages.create(index=3, kind="compute_tray", action="power_cycle",
                                   max_parallel=8, verify="none", retries=0, time_limit_s=60)  # fmt: skip
    cycle.members.create(node=tray, order=0, status="done", cycle_sent_at=T0)
    boot(tray, at=T0 - timedelta(minutes=5), name="old")
    look(rack_run, T0)
    assert not AgentCommand.objects.filter(phase=PHASE, node=tray).exists()
    boot(tray, at=T0 + timedelta(minutes=1), name="new")
    look(rack_run, T0)
    first = AgentCommand.objects.get(phase=PHASE, node=tray)
    # The tray rebooted under the command: it is lost, and asked of the next boot.
    AgentCommand.objects.filter(pk=first.pk).update(status=CommandStatus.LOST)
    look(rack_run, T0)
    report = RackTrayReport.objects.get(node=tray)
    assert report.attempts == 2 and report.command_id != first.pk
    for attempts in (MAX_ATTEMPTS, MAX_ATTEMPTS):  # a third time, then no more
        AgentCommand.objects.filter(node=tray).update(status=CommandStatus.LOST)
        look(rack_run, T0)
        assert RackTrayReport.objects.get(node=tray).attempts == attempts
    assert AgentCommand.objects.filter(phase=PHASE, node=tray).count() == MAX_ATTEMPTS


# -- dcgmi mndiag, where the rack's profile asks for it ---------------------------------------

MNDIAG_PASS = "mndiag/mndiag_4.6.0_18_hosts_pass.derived.json"  # derived from DCGM's source
MNDIAG_FAIL = "mndiag/mndiag_4.6.0_18_hosts_c07_gpu2_fail.derived.json"


def require_mndiag(rack_run) -> None:
    """Publish the rack-scale SKU's profile: rack-wide gates only, dcgmi mndiag among them."""
    sku = rack_run.rack.system.sku
    profile = AcceptanceProfile(
        yaml_text=f'sku: {sku.name}\nversion: "1.0.0"\nrack_gates: [mndiag]\n'
    )
    profile.full_clean()
    profile.save()
    profile.publish()


def every_tray_answers(rack_run, members) -> list:
    trays = members[NodeKind.COMPUTE_TRAY]
    for tray in trays:
        boot(tray)
    look(rack_run, T0)
    for number, command in enumerate(AgentCommand.objects.filter(phase=PHASE).order_by("pk")):
        answer(command, number)
    shelves_read(rack_run, members)
    return trays


def mndiag_command() -> AgentCommand:
    return AgentCommand.objects.get(phase=PHASE, params__tools__0__tool=MNDIAG_TOOL)


@pytest.mark.parametrize("sample,passes", [(MNDIAG_PASS, True), (MNDIAG_FAIL, False)])
def test_the_head_tray_runs_mndiag_over_every_tray_and_its_result_joins_the_verdict(
    rack, sample, passes
):
    rack_run, members = rack
    require_mndiag(rack_run)
    trays = every_tray_answers(rack_run, members)
    waiting = look(rack_run, T0)
    assert waiting.reason == "waiting for dcgmi mndiag over the compute trays"
    command = mndiag_command()
    assert command.node_id == trays[0].pk  # the head: the first tray up
    [spec] = command.params["tools"]
    assert spec["hosts"] == rs.imex_addresses()  # every tray by its IMEX address
    assert look(rack_run, T0).passed is None  # asked once
    assert AgentCommand.objects.filter(phase=PHASE).count() == 19

    outputs = {"mndiag": read(sample)}
    store_result(command, {"status": "done", "exit_code": 0, "result": {"outputs": outputs}})
    judged = look(rack_run, T0)
    verdict = RackVerdict.objects.get(rack_run=rack_run)
    assert verdict.metrics["mndiag"]["ran_on"] == "c01"
    if passes:
        assert judged.passed is True, judged.reason
        assert judged.reason.endswith("; dcgmi mndiag passed on 72 GPUs of 18 trays")
        return
    assert judged.passed is False and verdict.verdict == Verdict.FAIL
    assert judged.reason.startswith(f"tray c07 (serial {trays[6].serial}) GPU 2 (")
    assert "dcgmi mndiag MNUBERGEMM Fail: CUDA Error : cudaStreamQuery" in judged.reason
    [finding] = [f for f in verdict.findings if f["code"] == "mndiag_gpu_failed"]
    assert finding["part"] == "tray c07 GPU 2"


def test_a_required_mndiag_that_never_answers_is_unknown_never_a_pass(rack):
    rack_run, members = rack
    require_mndiag(rack_run)
    every_tray_answers(rack_run, members)
    look(rack_run, T0)
    AgentCommand.objects.filter(pk=mndiag_command().pk).update(status=CommandStatus.LOST)
    look(rack_run, T0)  # asked again
    assert RackVerdict.objects.get(rack_run=rack_run).mndiag_attempts == 2
    late = look(rack_run, T0 + timedelta(minutes=31))
    assert late.passed is False
    verdict = RackVerdict.objects.get(rack_run=rack_run)
    assert verdict.verdict == Verdict.ERROR  # the fabric passed; mndiag is unknown
    assert verdict.summary.startswith("dcgmi mndiag: no result (tray c01 ran it: its command is ")
    assert verdict.summary.endswith("); the rack's profile requires it")
    status = fabric_status(rack_run.rack.system)  # what the rack view, API and NetBox read
    assert (status.word, status.passed) == (FabricWord.UNKNOWN, False)


def test_a_profile_published_while_the_gate_runs_does_not_change_what_it_waits_for(rack):
    rack_run, members = rack
    for tray in members[NodeKind.COMPUTE_TRAY]:
        boot(tray)
    look(rack_run, T0)  # the gate starts: the SKU's profile asks for no rack-wide gate
    assert RackVerdict.objects.get(rack_run=rack_run).mndiag_required is False
    require_mndiag(rack_run)
    for number, command in enumerate(AgentCommand.objects.filter(phase=PHASE).order_by("pk")):
        answer(command, number)
    shelves_read(rack_run, members)
    judged = look(rack_run, T0)
    assert judged.passed is True, judged.reason
    assert "mndiag" not in judged.reason
    assert not AgentCommand.objects.filter(params__tools__0__tool=MNDIAG_TOOL).exists()
