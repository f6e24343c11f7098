"""Scenes of rack-scale systems (issue 34) for the decision, page and API tests: an NVL72 rack
brought to a moment of its life, every state through its lifecycle's one function.

The rack run that judged the rack is written as rows, as the node scenes write runs: a finished
rack run and its rack-wide verdict, whose findings and line come from the real judge
(acceptance.rack_fabric) over the NVL72 reports built from real captures
(tests/acceptance/rack_samples.py). The tests are about what a person decides from a verdict,
not how the rack run reached it (tests/provisioning/test_rack_runs.py).
"""

from __future__ import annotations

from datetime import timedelta
from functools import cache

from django.utils import timezone

from acceptance.choices import Verdict
from acceptance.gates import GateName
from acceptance.rack_fabric import judge_rack_fabric
from acceptance.rack_models import RackVerdict
from fleet import rack_lifecycle
from fleet.choices import NodeKind, NodeState, RackState
from fleet.models import Manifest, Node, RackSystem
from provisioning.choices import RackRunStatus, RunStatus
from provisioning.models import Run
from provisioning.rack_models import RackRun
from tests import factories
from tests.acceptance import rack_samples

from . import scenes

RACK_PATH = (RackState.BRINGING_UP, RackState.VALIDATING, RackState.AWAITING_APPROVAL)
# GPU 2 of tray c04 in another clique: the fault only the rack-wide verdict sees.
OTHER_CLIQUE = {"c04": {"nvidia-smi": rack_samples.smi_report(3, {2: {"CliqueId": "4027"}})}}
# Tray c09 reported nothing: unknown, and only unknowns make an error, never a pass.
SILENT = {"c09": {"nvidia-smi": None, "imex": None, "nvlink": None}}


@cache
def judged(fault: str) -> tuple[str, str, list[dict]]:
    """(verdict, summary, findings) of the real judge over the NVL72 reports with `fault`."""
    overrides = {"pass": None, "fail": OTHER_CLIQUE, "error": SILENT}[fault]
    verdict = judge_rack_fabric(rack_samples.rack(overrides))
    findings = [f.to_dict() for f in verdict.findings]
    summary = "; ".join(f["message"] for f in findings) or (
        f"{verdict.metrics['gpus_in_domain']} GPUs of 18 compute trays in one clique, every "
        "link up, IMEX lists every tray; 8 power shelves on"
    )
    return str(verdict.verdict), summary[:500], findings


def observe_fabric(system: RackSystem, fabric: str | None) -> RackRun:
    """A finished rack run of the system with its rack-wide verdict: "pass", "fail", "error"
    (judged by the real judge), "running" (still collecting), or None (no verdict row)."""
    now = timezone.now()
    rack_run = RackRun.objects.create(
        rack=system.rack,
        manifest=Manifest.current_for(system.sku),
        status=RackRunStatus.SUCCEEDED,
        stage_index=4,
        finished_at=now,
    )
    if fabric is None:
        return rack_run
    verdict, summary, findings = (
        (Verdict.RUNNING, "", []) if fabric == "running" else judged(fabric)
    )
    RackVerdict.objects.create(
        rack_run=rack_run,
        verdict=verdict,
        summary=summary,
        findings=findings,
        started_at=now - timedelta(minutes=5),
        deadline=now + timedelta(minutes=25),
        judged_at=None if fabric == "running" else now,
    )
    return rack_run


def awaiting_member(node: Node, *, passed: bool = True) -> Node:
    """A member awaiting approval after its node run: a compute tray with its gates (passed,
    or the NVLink fabric gate failed), a switch tray or shelf with its out-of-band run alone."""
    scenes.walk(node, NodeState.AWAITING_APPROVAL)
    run = scenes.make_run(node, status=RunStatus.SUCCEEDED)
    # On its own SKU's published manifest, as a member's finished run leaves it.
    own = Manifest.current_for(node.sku)
    Run.objects.filter(pk=run.pk).update(manifest=own)
    Node.objects.filter(pk=node.pk).update(manifest=own)
    if node.kind == NodeKind.COMPUTE_TRAY:
        failing = {} if passed else {GateName.FABRIC: [scenes.fabric_finding()]}
        scenes.pass_gates(run, failing=failing)
    return node


def awaiting_nvl72(
    name: str = "NVL01", *, fabric: str | None = "pass", runs: bool = True
) -> tuple[RackSystem, dict[str, list[Node]]]:
    """An NVL72 rack awaiting approval, every member awaiting approval, its latest rack run's
    verdict `fabric` (observe_fabric); no rack run at all when `runs` is False."""
    system, members = factories.make_nvl72_rack(name)
    for kind_members in members.values():
        for node in kind_members:
            awaiting_member(node)
    for state in RACK_PATH:
        rack_lifecycle.transition(system, state, actor_label="scene")
    if runs:
        observe_fabric(system, fabric)
    return system, members
