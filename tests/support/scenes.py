"""Scenes for the board and decision tests: nodes with runs, phase records, gates and soak data.

A scene is built in the database directly (not through the pipeline) so a test can show any
moment of a bring-up; only the node's state goes through fleet.lifecycle.transition.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from acceptance.choices import Verdict
from acceptance.gates import GateName
from acceptance.models import GateResult, SoakSample
from fleet.choices import NodeState
from fleet.lifecycle import transition
from fleet.models import Manifest, Node, Rack
from provisioning.boot.credentials import arm_for_boot, ephemeral_credential, secret_of
from provisioning.choices import PhaseStatus, RunStatus
from provisioning.core.phases import PHASES
from provisioning.models import PhaseRecord, Run
from tests import factories

S = NodeState

# The path a node walks from enrolment to each state, every step an allowed transition.
PATHS: dict[str, list[str]] = {
    S.ENROLLED: [],
    S.PROVISIONING: [S.PROVISIONING],
    S.FAILED: [S.PROVISIONING, S.FAILED],
    S.VALIDATING: [S.PROVISIONING, S.VALIDATING],
    S.AWAITING_APPROVAL: [S.PROVISIONING, S.VALIDATING, S.AWAITING_APPROVAL],
    S.IN_SERVICE: [S.PROVISIONING, S.VALIDATING, S.AWAITING_APPROVAL, S.IN_SERVICE],
    S.QUARANTINED: [S.PROVISIONING, S.VALIDATING, S.QUARANTINED],
}


def walk(node: Node, to_state: str, *, actor_label: str = "scene") -> Node:
    """Move a node along PATHS to `to_state`, through the lifecycle's one function."""
    path = PATHS[to_state]
    start = path.index(node.state) + 1 if node.state in path else 0
    for state in path[start:]:
        transition(node, state, actor_label=actor_label)
    return node


def manifest() -> Manifest:
    return Manifest.objects.filter(status="published").first() or factories.make_manifest()


def make_run(
    node: Node, *, phases_done: int = len(PHASES), status: str = RunStatus.RUNNING, **kw
) -> Run:
    """A run with its first `phases_done` phases finished and the next one running."""
    now = timezone.now()
    run = Run.objects.create(
        node=node,
        manifest=manifest(),
        status=status,
        current_phase=PHASES[min(phases_done, len(PHASES) - 1)].name,
        started_at=now - timedelta(minutes=40),
        **kw,
    )
    records = []
    for order, info in enumerate(PHASES):
        if order > phases_done:
            break
        begun = now - timedelta(minutes=40 - order * 2)
        if order < phases_done:
            skipped = info.name in {"bmc_firmware", "dpu_firmware"}
            records.append(
                PhaseRecord(
                    run=run,
                    phase=info.name,
                    order=order,
                    status=PhaseStatus.SKIPPED if skipped else PhaseStatus.DONE,
                    attempts=1,
                    started_at=begun,
                    finished_at=begun + timedelta(seconds=20 + order * 7),
                    changes=(
                        [{"component": "BIOS", "from": "2.1.4", "to": "2.3.0"}]
                        if info.name == "bios_firmware"
                        else []
                    ),
                )
            )
        elif status in (RunStatus.RUNNING, RunStatus.WAITING, RunStatus.FAILED):
            failed = status == RunStatus.FAILED
            records.append(
                PhaseRecord(
                    run=run,
                    phase=info.name,
                    order=order,
                    status=PhaseStatus.FAILED if failed else PhaseStatus.RUNNING,
                    attempts=3 if failed else 1,
                    started_at=begun,
                    finished_at=begun + timedelta(seconds=95) if failed else None,
                    error="NVMe 3 (S64FNE0R812345): firmware update failed: image rejected"
                    if failed
                    else "",
                )
            )
    PhaseRecord.objects.bulk_create(records)
    return run


def booted_secret(run: Run) -> str:
    """The run's ephemeral credential as a boot Greenlight ordered presents it: armed once."""
    credential = ephemeral_credential(run)
    arm_for_boot(run.node_id)
    return secret_of(credential)


def pass_gates(run: Run, *, failing: dict[str, list[dict]] | None = None) -> list[GateResult]:
    """Gate results for every gate; those named in `failing` fail with those findings."""
    failing = failing or {}
    now = timezone.now()
    values = {
        GateName.ATTESTATION: ({"signature_valid": 1}, {"require_signature": 1}),
        GateName.GPU_HEALTH: (
            {"uncorrectable_ecc": 0, "pending_row_remaps": 0},
            {"max_uncorrectable_ecc": 0, "max_pending_row_remaps": 0},
        ),
        GateName.NVBANDWIDTH: ({"fraction_of_spec": 0.94}, {"min_fraction_of_spec": 0.85}),
        GateName.FABRIC: ({"busbw_fraction": 0.95}, {"min_busbw_fraction": 0.92}),
        GateName.STORAGE: (
            {"read_mbps": 7100, "write_mbps": 3900},
            {"min_read_mbps": 6000, "min_write_mbps": 3000},
        ),
        GateName.BURN_IN: ({"gpu_temp_c": 78}, {"max_gpu_temp_c": 87}),
    }
    results = []
    for i, (gate, (metrics, thresholds)) in enumerate(values.items()):
        findings = failing.get(gate, [])
        if gate == GateName.FABRIC and findings:
            metrics = {"busbw_fraction": 0.61}
        if gate == GateName.BURN_IN and findings:
            metrics = {"gpu_temp_c": 91}
        results.append(
            GateResult(
                run=run,
                node=run.node,
                gate=gate,
                verdict=Verdict.FAIL if findings else Verdict.PASS,
                metrics=metrics,
                thresholds=thresholds,
                findings=findings,
                raw_output={},
                started_at=now + timedelta(seconds=i),
                finished_at=now + timedelta(seconds=i + 1),
            )
        )
    GateResult.objects.bulk_create(results)
    return results


def soak(result: GateResult, *, samples: int = 24, xid_at: int | None = None) -> None:
    """Soak telemetry; from sample `xid_at` on, GPU 3 runs hot and the bus bandwidth sags."""
    rows = []
    for i in range(samples):
        hot = xid_at is not None and i >= xid_at
        temps = [68 + (i % 5) + g for g in range(8)]
        if hot:
            temps[3] = 84 + (i - xid_at) * 2
        rows.append(
            SoakSample(
                gate_result=result,
                lab_t_s=i * 600.0,
                gpu_temps_c=temps,
                gpu_power_w=[640 + (i * 7) % 40 + g for g in range(8)],
                busbw_gbps=(300 if hot else 368) + (i * 3) % 9,
            )
        )
    SoakSample.objects.bulk_create(rows)


def awaiting_node(rack: Rack | None = None, *, passed: bool = True, **kw) -> Node:
    """A node awaiting approval whose latest run passed (or failed) its gates."""
    node = factories.make_node(rack=rack, **kw)
    walk(node, S.AWAITING_APPROVAL)
    run = make_run(node, status=RunStatus.SUCCEEDED)
    failing = {} if passed else {GateName.FABRIC: [fabric_finding()]}
    pass_gates(run, failing=failing)
    return node


def fabric_finding() -> dict:
    return {
        "part": "NIC 0 (mlx5_0)",
        "part_serial": "MT2231X01234",
        "kind": "busbw",
        "message": "NIC 0: busbw 61% of line rate",
    }


def xid_finding() -> dict:
    return {
        "part": "GPU 3",
        "part_serial": "1652823054321",
        "kind": "xid",
        "message": "GPU 3: XID 79 (fallen off the bus) at soak hour 14",
    }


def build_rack(rack: Rack, mix: dict[str, int], *, start: int = 1) -> list[Node]:
    """Fill a rack from U`start` up with nodes in the given states, each with a plausible history."""
    nodes = []
    position = start
    for state, count in mix.items():
        for _ in range(count):
            node = factories.make_node(rack=rack, position=position)
            position += 1
            walk(node, state)
            if state == S.PROVISIONING:
                make_run(node, phases_done=(position * 3) % len(PHASES))
            elif state == S.FAILED:
                make_run(node, phases_done=10, status=RunStatus.FAILED)
            elif state in (S.VALIDATING, S.AWAITING_APPROVAL, S.IN_SERVICE, S.QUARANTINED):
                status = RunStatus.RUNNING if state == S.VALIDATING else RunStatus.SUCCEEDED
                run = make_run(node, status=status)
                if state != S.VALIDATING:
                    failing = (
                        {GateName.FABRIC: [fabric_finding()], GateName.BURN_IN: [xid_finding()]}
                        if state == S.QUARANTINED
                        else {}
                    )
                    results = pass_gates(run, failing=failing)
                    soak(results[-1], xid_at=14 if failing else None)
            nodes.append(node)
    return nodes
