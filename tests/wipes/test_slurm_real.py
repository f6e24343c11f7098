"""The Slurm adapter against a real slurmctld and slurmd on loopback (skipped without Slurm).

Debian's slurmctld, slurmd and slurm-client are enough: the fixture writes a one-node cluster's
slurm.conf (auth/none, loopback, this host), starts both daemons in the foreground and stops them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

from fleet.choices import NodeState
from provisioning.outcomes import Done
from provisioning.phases import phase_for
from provisioning.schedulers.slurm import SlurmScheduler, parse_node
from tests import factories

TOOLS = ("slurmctld", "slurmd", "scontrol", "sbatch", "scancel")
NODE = "gl-node-1"

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in TOOLS) or os.geteuid() != 0,
    reason="Slurm (slurmctld, slurmd, slurm-client) is not installed, or not running as root",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(condition, what: str, timeout: float = 30.0):
    """Poll `condition` (bounded) until it returns something true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _show() -> str:
    done = subprocess.run(
        ["scontrol", "--oneliner", "show", "node", NODE], capture_output=True, text=True
    )
    return done.stdout


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """A one-node Slurm cluster on loopback; yields the node's name."""
    for sub in ("state", "spool"):
        (tmp_path / sub).mkdir()
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=greenlight",
                "SlurmctldHost=localhost(127.0.0.1)",
                f"SlurmctldPort={_free_port()}",
                f"SlurmdPort={_free_port()}",
                "AuthType=auth/none",
                "CredType=cred/none",
                "SlurmUser=root",
                "SlurmdUser=root",
                f"StateSaveLocation={tmp_path}/state",
                f"SlurmdSpoolDir={tmp_path}/spool",
                f"SlurmctldPidFile={tmp_path}/slurmctld.pid",
                f"SlurmdPidFile={tmp_path}/slurmd.pid",
                f"SlurmctldLogFile={tmp_path}/slurmctld.log",
                f"SlurmdLogFile={tmp_path}/slurmd.log",
                "ProctrackType=proctrack/pgid",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "ReturnToService=2",
                "MpiDefault=none",
                "SlurmdParameters=config_overrides",
                f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} "
                "CPUs=1 State=UNKNOWN",
                "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )
    )
    monkeypatch.setenv("SLURM_CONF", str(conf))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    daemons = [
        subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=env),
        subprocess.Popen(["slurmd", "-D", "-f", str(conf), "-N", NODE], env=env),
    ]
    try:
        _until(lambda: "State=IDLE " in _show(), "the Slurm node to be idle")
        yield NODE
    finally:
        subprocess.run(["scancel", "--full", "--partition=debug"], env=env, capture_output=True)
        for daemon in daemons:
            daemon.terminate()
        for daemon in daemons:
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()


def test_a_running_job_keeps_the_node_draining_until_it_ends(db, rack, slurm):
    node = factories.make_node(rack=rack, hostname=slurm)
    adapter = SlurmScheduler()
    job = subprocess.run(
        ["sbatch", "--parsable", "-w", slurm, "-o", "/dev/null", "--wrap", "sleep 300"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    _until(lambda: parse_node(_show())[0] in ("ALLOCATED", "MIXED"), "the job to start")

    adapter.cordon(node, "greenlight: tenant release")

    base, flags, cpus = parse_node(_show())
    assert (base, "DRAIN" in flags, cpus) == ("ALLOCATED", True, 1)
    assert "Reason=greenlight: tenant release" in _show()
    assert not adapter.is_drained(node)

    subprocess.run(["scancel", job], check=True)
    _until(lambda: adapter.is_drained(node), "the node to drain after the job ended")

    adapter.uncordon(node)
    base, flags, _ = parse_node(_show())
    assert base == "IDLE" and "DRAIN" not in flags


def test_the_drain_phase_drains_an_idle_slurm_node_at_once(alice, rack, manifest, slurm, settings):
    from provisioning.choices import PhaseStatus
    from provisioning.phases.base import PhaseContext
    from provisioning.wipe_requests import request_wipe

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
    assert "DRAIN" in parse_node(_show())[1]
