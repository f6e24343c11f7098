"""The drain phase and the scheduler adapters (lab, and Slurm and Kubernetes against stand-ins)."""

from __future__ import annotations

import json
import stat
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from fleet.choices import NodeState
from provisioning.choices import PhaseStatus
from provisioning.core.phases import phase_for
from provisioning.core.phases.base import PhaseContext
from provisioning.day2.wipes.requests import request_wipe
from provisioning.models import PhaseRecord
from provisioning.outcomes import Done, Failure, Skipped, TransientFailure, Wait
from provisioning.schedulers import SchedulerError, configured
from provisioning.schedulers.kubernetes import KubernetesScheduler, blocking_pods
from provisioning.schedulers.lab import DRAIN_SECONDS
from provisioning.schedulers.slurm import SlurmScheduler, is_drained_state, parse_node

from .conftest import ALLOCATION, TENANT


@pytest.fixture
def drain_ctx(alice, nodes, settings):
    settings.GREENLIGHT_TIME_SCALE = 1.0
    request_wipe(nodes[:1], TENANT, ALLOCATION, alice)
    node = nodes[0]
    node.refresh_from_db()
    run = node.runs.get()
    record = run.phases.get(phase="drain")
    PhaseRecord.objects.filter(pk=record.pk).update(status=PhaseStatus.RUNNING)
    record.refresh_from_db()
    return PhaseContext(run=run, node=node, record=record, manifest=run.manifest.spec)


def _look(ctx: PhaseContext):
    ctx.node.refresh_from_db()
    return phase_for("drain").execute(ctx)


def test_the_lab_drains_after_its_delay_then_the_node_goes_to_wiping(drain_ctx, settings):
    settings.GREENLIGHT_SCHEDULER = "lab"
    first = _look(drain_ctx)
    assert isinstance(first, Wait) and "lab scheduler" in first.reason
    assert drain_ctx.record.stage == "draining"
    assert _look(drain_ctx) == first  # time has not passed: still waiting

    # Lab time passes (the record is the lab scheduler's only state).
    earlier = timezone.now() - timedelta(seconds=DRAIN_SECONDS + 1)
    PhaseRecord.objects.filter(pk=drain_ctx.record.pk).update(stage_started_at=earlier)
    drain_ctx.record.refresh_from_db()

    assert isinstance(_look(drain_ctx), Done)
    assert drain_ctx.node.state == NodeState.WIPING
    # A step that died after the move looks again: nothing is repeated.
    assert isinstance(_look(drain_ctx), Skipped)


def test_a_node_no_longer_releasing_fails_the_drain(drain_ctx):
    from fleet.models import Node

    Node.objects.filter(pk=drain_ctx.node.pk).update(state=NodeState.FAILED)
    outcome = _look(drain_ctx)
    assert isinstance(outcome, Failure) and outcome.permanent


def _tool(directory: Path, name: str, script: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_a_missing_scheduler_tool_is_a_transient_failure(
    drain_ctx, settings, monkeypatch, tmp_path
):
    settings.GREENLIGHT_SCHEDULER = "slurm"
    monkeypatch.setenv("PATH", str(tmp_path))
    outcome = _look(drain_ctx)
    assert isinstance(outcome, TransientFailure) and outcome.component == "scheduler"
    assert "scontrol is not installed" in outcome.reason


def test_a_scheduler_that_refuses_the_node_fails_the_drain(
    drain_ctx, settings, monkeypatch, tmp_path
):
    settings.GREENLIGHT_SCHEDULER = "slurm"
    _tool(
        tmp_path, "scontrol", 'echo "slurm_update error: Invalid node name specified" >&2\nexit 1\n'
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    outcome = _look(drain_ctx)
    assert isinstance(outcome, Failure) and not outcome.permanent
    assert "Invalid node name specified" in outcome.reason
    assert drain_ctx.node.state == NodeState.RELEASING


def test_an_unknown_scheduler_setting_is_named(settings):
    settings.GREENLIGHT_SCHEDULER = "pbs"
    with pytest.raises(SchedulerError, match="'pbs'; expected one of kubernetes, lab, slurm"):
        configured()


# -- Slurm -------------------------------------------------------------------------------------

SHOW_NODE = (
    "NodeName=gpu-001 Arch=x86_64 CoresPerSocket=1  CPUAlloc={alloc} CPUEfctv=1 CPUTot=1 "
    "CPULoad=0.05 AvailableFeatures=(null) NodeAddr=127.0.0.1 State={state} ThreadsPerCore=1 "
    "Partitions=debug Reason=greenlight: tenant release [root@2026-01-05T10:00:00]"
)


@pytest.mark.parametrize(
    "state, alloc, drained",
    [
        ("IDLE+DRAIN", 0, True),
        ("DRAINED", 0, True),
        ("DOWN*+DRAIN", 0, True),
        ("ALLOCATED+DRAIN", 8, False),
        ("MIXED+DRAIN", 2, False),
        ("IDLE+COMPLETING+DRAIN", 0, False),
        ("IDLE", 0, False),
        ("ALLOCATED", 8, False),
    ],
)
def test_slurm_says_drained_only_when_drain_is_set_and_no_job_runs(state, alloc, drained):
    assert is_drained_state(*parse_node(SHOW_NODE.format(state=state, alloc=alloc))) is drained


def test_slurm_adapter_calls_scontrol_as_documented(db, rack, monkeypatch, tmp_path):
    from tests import factories

    log = tmp_path / "calls"
    _tool(
        tmp_path,
        "scontrol",
        f'for a in "$@"; do printf "%s|" "$a"; done >> {log}; echo >> {log}\n'
        f'[ "$2" = show ] && echo "{SHOW_NODE.format(state="IDLE+DRAIN", alloc=0)}"\nexit 0\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    node = factories.make_node(rack=rack, hostname="gpu-001")
    slurm = SlurmScheduler()

    slurm.cordon(node, "greenlight: tenant\nrelease")
    assert slurm.is_drained(node)
    slurm.uncordon(node)

    assert log.read_text().splitlines() == [
        "update|NodeName=gpu-001|State=DRAIN|Reason=greenlight: tenant release|",
        "--oneliner|show|node|gpu-001|",
        # Resume looks first: Slurm refuses RESUME on a node that is not drained or down.
        "--oneliner|show|node|gpu-001|",
        "update|NodeName=gpu-001|State=RESUME|",
    ]


# -- Kubernetes --------------------------------------------------------------------------------


def _pod(name, *, owner="ReplicaSet", phase="Running", mirror=False) -> dict:
    meta = {"name": name, "namespace": "tenant", "ownerReferences": [{"kind": owner}]}
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    return {"metadata": meta, "status": {"phase": phase}}


def test_daemonsets_mirror_pods_and_finished_pods_do_not_keep_a_node_busy():
    pods = {
        "items": [
            _pod("dcgm-exporter", owner="DaemonSet"),
            _pod("kube-proxy", owner="Node", mirror=True),
            _pod("done", phase="Succeeded"),
            _pod("training-0", owner="StatefulSet"),
        ]
    }
    assert blocking_pods(pods) == ["tenant/training-0"]


def test_kubernetes_adapter_cordons_drains_and_looks_at_the_pods(db, rack, monkeypatch, tmp_path):
    from tests import factories

    log, pods = tmp_path / "calls", tmp_path / "pods.json"
    _tool(tmp_path, "kubectl", f'echo "$@" >> {log}\n[ "$1" = get ] && cat {pods}\nexit 0\n')
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    node = factories.make_node(rack=rack, hostname="gpu-002")
    kube = KubernetesScheduler()

    kube.cordon(node, "tenant release")
    pods.write_text(json.dumps({"items": [_pod("training-0")]}))
    assert not kube.is_drained(node)
    pods.write_text(json.dumps({"items": [_pod("dcgm", owner="DaemonSet")]}))
    assert kube.is_drained(node)
    kube.uncordon(node)

    drain = "drain gpu-002 --ignore-daemonsets --delete-emptydir-data --timeout=20s"
    get = "get pods --all-namespaces -o json --field-selector spec.nodeName=gpu-002"
    assert log.read_text().splitlines() == [
        "cordon gpu-002",
        drain,
        get,
        drain,  # a pod remained: the eviction is asked for again
        get,
        "uncordon gpu-002",
    ]
