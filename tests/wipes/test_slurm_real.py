"""The Slurm adapter against a real slurmctld and slurmd on loopback (skipped without Slurm;
the cluster is tests.support.slurm's, through the `slurm` fixture of this folder's conftest)."""

from __future__ import annotations

import subprocess

from fleet.choices import NodeState
from provisioning.core.phases import phase_for
from provisioning.outcomes import Done
from provisioning.schedulers.slurm import SlurmScheduler, parse_node
from tests import factories
from tests.support.slurm import needs_slurm, show, until

pytestmark = needs_slurm


def test_a_running_job_keeps_the_node_draining_until_it_ends(db, rack, slurm):
    node = factories.make_node(rack=rack, hostname=slurm)
    adapter = SlurmScheduler()
    job = subprocess.run(
        ["sbatch", "--parsable", "-w", slurm, "-o", "/dev/null", "--wrap", "sleep 300"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    until(lambda: parse_node(show())[0] in ("ALLOCATED", "MIXED"), "the job to start")

    adapter.cordon(node, "greenlight: tenant release")

    base, flags, cpus = parse_node(show())
    assert (base, "DRAIN" in flags, cpus) == ("ALLOCATED", True, 1)
    assert "Reason=greenlight: tenant release" in show()
    assert not adapter.is_drained(node)

    subprocess.run(["scancel", job], check=True)
    until(lambda: adapter.is_drained(node), "the node to drain after the job ended")

    adapter.uncordon(node)
    base, flags, _ = parse_node(show())
    assert base == "IDLE" and "DRAIN" not in flags


def test_the_drain_phase_drains_an_idle_slurm_node_at_once(alice, rack, manifest, slurm, settings):
    from provisioning.choices import PhaseStatus
    from provisioning.core.phases.base import PhaseContext
    from provisioning.day2.wipes.requests import request_wipe

    from .conftest import ALLOCATION, TENANT, allocated_node

    settings.GREENLIGHT_SCHEDULER = "slurm"
    node = allocated_node(rack)
    node.hostname = slurm
    node.save(update_fields=["hostname"])
    request_wipe([node], TENANT, ALLOCATION, alice)
    node.refresh_from_db()
    run = node.runs.get()
    record = run.phases.get(phase="drain")
    record.status = PhaseStatus.RUNNING
    record.save()

    outcome = phase_for("drain").execute(
        PhaseContext(run=run, node=node, record=record, manifest=run.manifest.spec)
    )

    assert isinstance(outcome, Done), outcome
    node.refresh_from_db()
    assert node.state == NodeState.WIPING
    assert "DRAIN" in parse_node(show())[1]
