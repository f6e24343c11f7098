"""A one-node Slurm cluster on loopback for the tests that need a real Slurm (skipped without).

Debian's slurmctld, slurmd and slurm-client are enough: `one_node_slurm` writes the cluster's
slurm.conf (auth/none, loopback, this host), starts both daemons in the foreground and stops them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lab.processes import free_port

TOOLS = ("slurmctld", "slurmd", "scontrol", "sbatch", "scancel")
NODE = "gl-node-1"

needs_slurm = pytest.mark.skipif(
    any(shutil.which(t) is None for t in TOOLS) or os.geteuid() != 0,
    reason="Slurm (slurmctld, slurmd, slurm-client) is not installed, or not running as root",
)


def until(condition, what: str, timeout: float = 30.0, explain=None):
    """Poll `condition` (bounded) until it returns something true; on a time-out, the message
    carries `explain()` (what the waited-for things were doing), for whoever reads a CI log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    seen = f"; {explain()}" if explain else ""
    raise AssertionError(f"timed out waiting for {what}{seen}")


def show(env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["scontrol", "--oneliner", "show", "node", NODE], capture_output=True, text=True, env=env
    )
    return done.stdout


def _write_conf(tmp_path: Path, spool: Path) -> Path:
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=greenlight",
                "SlurmctldHost=localhost(127.0.0.1)",
                f"SlurmctldPort={free_port()}",
                f"SlurmdPort={free_port()}",
                "AuthType=auth/none",
                "CredType=cred/none",
                "SlurmUser=root",
                "SlurmdUser=root",
                f"StateSaveLocation={tmp_path}/state",
                f"SlurmdSpoolDir={spool}",
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
    return conf


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(daemons: list[subprocess.Popen]) -> None:
    for daemon in daemons:
        daemon.terminate()
    for daemon in daemons:
        try:
            daemon.wait(timeout=10)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()


# Under CI's parallel load slurmd has taken over 30 s to register, and a port free_port handed
# out can be taken by a neighbour before the daemon binds it (the daemon then exits): the start
# waits longer, and a daemon that died is started again on fresh ports.
START_ATTEMPTS = 3
START_TIMEOUT_S = 90.0


def _start(base: Path, spool: Path) -> tuple[Path, list[subprocess.Popen], str]:
    """Start both daemons on fresh ports, writing under `base` and `spool`; (conf, daemons, ""
    once the node is idle, else why not: a daemon died, or the time ran out)."""
    (base / "state").mkdir(parents=True)
    spool.mkdir()
    conf = _write_conf(base, spool)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    daemons = [
        subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=env),
        subprocess.Popen(["slurmd", "-D", "-f", str(conf), "-N", NODE], env=env),
    ]
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and all(d.poll() is None for d in daemons):
        if "State=IDLE " in show(env):
            return conf, daemons, ""
        time.sleep(0.2)
    alive = ["running" if d.poll() is None else f"exited {d.returncode}" for d in daemons]
    why = (
        f"slurmctld {alive[0]}, slurmd {alive[1]}; scontrol: {show(env).strip()!r}; "
        f"slurmctld.log: {_tail(base / 'slurmctld.log')}; slurmd.log: {_tail(base / 'slurmd.log')}"
    )
    return conf, daemons, why


@contextmanager
def one_node_slurm(tmp_path: Path, monkeypatch) -> Iterator[str]:
    """A one-node Slurm cluster on loopback; yields the node's name."""
    # slurmstepd makes a Unix socket in the spool directory, named after the node, job and step
    # (gl-node-1_1.4294967291): under pytest's deep temporary paths it passed the 108 bytes a
    # socket path may have, and every job failed to start. The spool lives in a short one.
    with tempfile.TemporaryDirectory(prefix="gl-slurm-") as spools:
        for attempt in range(1, START_ATTEMPTS + 1):
            conf, daemons, why = _start(tmp_path / f"slurm-{attempt}", Path(spools) / str(attempt))
            if not why:
                break
            _stop(daemons)
            if attempt == START_ATTEMPTS:
                raise AssertionError(f"timed out waiting for the Slurm node to be idle; {why}")
        monkeypatch.setenv("SLURM_CONF", str(conf))
        try:
            yield NODE
        finally:
            env = {**os.environ, "SLURM_CONF": str(conf)}
            subprocess.run(["scancel", "--full", "--partition=debug"], env=env, capture_output=True)
            _stop(daemons)
