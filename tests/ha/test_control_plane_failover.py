"""The control plane loses one machine after another, mid-run, and the rack does not notice
(issue 33's acceptance).

Every part is real and started here: a PostgreSQL primary with a synchronous streaming standby,
a Redis master with a replica and three sentinels, and a lab rack of eight nodes (BMCs, agents)
provisioned by two workers, two node planes behind a proxy and beat (tests/ha/failover_lab.py,
a child process told the HA peers by its environment, as every Greenlight process is). With
every run under way, in order: the PostgreSQL primary is killed and the standby promoted; the
Redis master is killed and the sentinels promote the replica; then the worker pinned in a
step (a node's BMC holds its answer to an HGX update it accepted) and a node plane the agents
report to are killed. Every node must end where a run without faults ends it, each firmware component
flashed once as the lab's BMCs and agents count, every phase's events present, and the events
naming the takeover.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from fleet.choices import EventKind, NodeState
from lab.processes import ROOT, child_env
from provisioning.choices import ACTIVE_RUN_STATUSES, PhaseStatus, RunStatus, Stage
from provisioning.core.phases import PHASE_NAMES
from tests.support import ha
from tests.support.slurm import until

pytestmark = [ha.needs_postgres, ha.needs_redis, pytest.mark.ha, pytest.mark.timeout(600)]

NODES = 8
# Lab seconds per real second: a run's firmware phases take some 20 s, its whole run 40 s.
SPEED = 400
OOB = {"bmc": 1, "bios": 1, "hgx": 1}


class FailoverLab:
    """The child process running the lab (tests/ha/failover_lab.py); one JSON line per ask."""

    def __init__(self, env: dict[str, str], log_dir) -> None:
        self.log = (log_dir / "failover-lab.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.ha.failover_lab", str(log_dir), str(NODES), str(SPEED)],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True,
        )  # fmt: skip
        self.started = self._read()

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the lab process ended ({self.proc.wait()}); see its log")
        return json.loads(line)

    def ask(self, command: str) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            # SIGTERM: it leaves through LabRun's exit, which stops the processes it started.
            self.proc.terminate()
            self.proc.wait(timeout=60)
        self.log.close()


def _position(status: str, phase: str) -> int:
    """How far a run has come: its phase's place in the pipeline (gates and the end after)."""
    if status not in ACTIVE_RUN_STATUSES:
        return len(PHASE_NAMES) + 1
    return PHASE_NAMES.index(phase) if phase in PHASE_NAMES else len(PHASE_NAMES) if phase else -1


def _until_progress(lab: FailoverLab, what: str, condition, timeout: float = 120.0) -> dict:
    seen: list[dict] = [{}]

    def check():
        seen[0] = lab.ask("progress")
        return seen[0] if condition(seen[0]) else None

    return until(check, what, timeout=timeout, explain=lambda: f"last seen: {seen[0]}")


def _all_active(progress: dict) -> bool:
    return all(_position(status, "") <= len(PHASE_NAMES) for status, _, _ in progress["runs"])


def _positions(progress: dict) -> list[int]:
    return [_position(status, phase) for status, phase, _ in progress["runs"]]


def _moved_on_from(before: list[int]):
    """Some run has reached a phase further on than it had at `before`."""
    return lambda progress: any(
        now > then for now, then in zip(_positions(progress), before, strict=True)
    )


def _node0_at(phase: str):
    def reached(progress: dict) -> bool:
        status, current, _ = progress["runs"][0]
        return _position(status, current) >= PHASE_NAMES.index(phase)

    return reached


def _pinned(armed: list[int]):
    """The first armed node whose BMC accepted the HGX update and holds the answer, while its
    run is running hgx_firmware still waiting for that answer: its worker is pinned in the
    step (and the run's holder is that worker, not one whose step has ended)."""

    def found(progress: dict) -> int | None:
        for index in armed:
            status, phase, _ = progress["runs"][index]
            if (
                progress["held_accepted"][index] == 1
                and (status, phase) == ("running", "hgx_firmware")
                and progress["held_stage"][index] == Stage.PUSHING
            ):
                return index
        return None

    return found


def _events_of(node: dict, kind: str) -> list[dict]:
    return [e for e in node["events"] if e["kind"] == kind and e["data"].get("run") == node["run"]]


def _faults_mid_run(lab: FailoverLab, pg: ha.PostgresPair, peers: ha.SentinelRedis) -> dict:
    """The faults, one after another while the rack's runs are under way; what the lab saw."""
    try:
        # 1. The database's machine dies while every run is under way and node 0's agent
        #    checks in; the standby is promoted (what Patroni does).
        _until_progress(lab, "node 0's agent to be awaited", _node0_at("wait_for_agent"))
        progress = lab.ask("progress")
        assert _all_active(progress), progress
        pg.kill_primary()
        pg.promote()

        # 2. The runs go on against the new primary; Redis's master dies next.
        progress = _until_progress(lab, "a run to move on", _moved_on_from(_positions(progress)))
        assert _all_active(progress), progress
        peers.kill_master()
        peers.wait_for_failover()

        # 3. A worker dies mid-step (pinned in a node's HGX update, which its BMC accepted
        #    and answers too late), and so does one of the agents' two web processes. The
        #    holds are armed now, on the runs still short of their HGX update: how long the
        #    failovers took is the machine's business.
        armed = lab.ask("hold")["armed"]
        assert armed, f"every run passed its HGX update during the failovers: {progress}"
        pinned = _pinned(armed)
        progress = _until_progress(
            lab, "a worker pinned in an HGX update", lambda p: pinned(p) is not None
        )
        assert _all_active(progress), progress
        index = pinned(progress)
        killed = lab.ask(f"kill worker-of {index}")["killed"]
        assert lab.ask("kill node-plane 1")["killed"]

        return {**lab.ask("finish"), "killed_worker": killed, "pinned": index}
    finally:
        lab.close()


def _migrate(database_url: str) -> subprocess.Popen:
    """Migrate the new database, in the background while the Redis peers start."""
    env = child_env(DATABASE_URL=database_url, GREENLIGHT_LAB_MODE="1")
    return subprocess.Popen([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env)


def _ha_env(database_url: str, peers: ha.SentinelRedis, name: str) -> dict[str, str]:
    """What every Greenlight process of the control plane is told: both databases, the
    sentinels, and no Redis of the test session's."""
    env = child_env(
        DATABASE_URL=database_url,
        **peers.env(),
        GREENLIGHT_LAB_MODE="1",
        CELERY_QUEUE=f"greenlight-failover-{name}",
        CHANNEL_PREFIX=f"greenlight-failover-{name}",
    )
    for own in ("REDIS_URL", "CELERY_BROKER_URL"):
        env.pop(own, None)
    return env


def test_a_rack_mid_run_survives_losing_the_database_redis_a_worker_and_a_web_process(tmp_path):
    with ha.postgres_pair(synchronous=True) as pg:
        assert ha.query(pg.primary_port, "CREATE DATABASE greenlight_ha") == []
        migrate = _migrate(pg.url("greenlight_ha"))
        with ha.sentinel_redis(tmp_path) as peers:
            assert migrate.wait(timeout=300) == 0
            env = _ha_env(pg.url("greenlight_ha"), peers, tmp_path.name)
            result = _faults_mid_run(FailoverLab(env, tmp_path), pg, peers)
    # Kept beside the processes' logs, for whoever reads a failure.
    (tmp_path / "result.json").write_text(json.dumps(result, indent=1))
    assert len(result["nodes"]) == NODES
    for node in result["nodes"]:
        # Where a run without faults ends: succeeded, the node awaiting a person's approval.
        assert (node["status"], node["state"]) == (
            RunStatus.SUCCEEDED,
            NodeState.AWAITING_APPROVAL,
        ), node
        _assert_flashed_once(node)
        _assert_no_event_lost(node)

    # The events say what happened: the pinned node's run taken over from the killed worker, at
    # the phase it had reached, by the worker that lived.
    killed = result["killed_worker"]
    takeovers = _events_of(result["nodes"][result["pinned"]], EventKind.RUN_TAKEN_OVER)
    assert any(
        t["data"]["from"] == killed and "at hgx_firmware from" in t["message"] for t in takeovers
    ), takeovers
    survivor = {t["data"]["to"] for t in takeovers if t["data"]["from"] == killed}
    assert survivor and killed not in survivor
    # The agents reported through both web processes, and on through the one that lived.
    assert all(result["proxy"]), result["proxy"]


def _assert_flashed_once(node: dict) -> None:
    """Each firmware component flashed once, as the BMC and the agent count it (the agent
    flashes every device of a kind that needs it, with one command)."""
    assert node["bmc_flashes"] == OOB, node["serial"]
    commands = node["flash_commands"]
    assert [c["component"] for c in commands] == ["dpu", "nic", "nvme"], node["serial"]
    flashed = {c["component"]: c["devices"] for c in commands}
    assert all(len(set(d)) == len(d) > 0 for d in flashed.values()), flashed
    assert node["inband_flashes"] == {k: len(d) for k, d in flashed.items()}, node["serial"]


def _assert_no_event_lost(node: dict) -> None:
    """The run's start and end once; every attempt of every phase started, and every phase
    ended once (done, or skipped), in the pipeline's order, each end its record's; the node's
    moves through validation to approval."""
    assert len(_events_of(node, EventKind.RUN_STARTED)) == 1, node["serial"]
    assert len(_events_of(node, EventKind.RUN_FINISHED)) == 1, node["serial"]
    started = Counter(e["data"]["phase"] for e in _events_of(node, EventKind.PHASE_STARTED))
    assert started == {phase: attempts for phase, _, attempts in node["phases"]}, node["serial"]
    ends = {EventKind.PHASE_DONE: PhaseStatus.DONE, EventKind.PHASE_SKIPPED: PhaseStatus.SKIPPED}
    ended = [
        (e["data"]["phase"], ends[e["kind"]])
        for e in node["events"]
        if e["kind"] in ends and e["data"].get("run") == node["run"]
    ]
    assert ended == [(phase, status) for phase, status, _ in node["phases"]], node["serial"]
    # A run without faults does every phase: one skipped here found its work done already,
    # by the worker whose step died with the database, and the events say so. boot_ephemeral
    # may skip by design: the power-on set the boot (oob.stage_first_boot), or the agent is up.
    takeovers = " ".join(t["message"] for t in _events_of(node, EventKind.RUN_TAKEN_OVER))
    for phase, status in ended:
        if phase == "boot_ephemeral":
            continue
        assert status == PhaseStatus.DONE or f"at {phase} from" in takeovers, (phase, takeovers)
    moves = [
        (e["data"]["from"], e["data"]["to"])
        for e in node["events"]
        if e["kind"] == EventKind.STATE_CHANGED
    ]
    assert moves[-3:] == [
        (NodeState.ENROLLED, NodeState.PROVISIONING),
        (NodeState.PROVISIONING, NodeState.VALIDATING),
        (NodeState.VALIDATING, NodeState.AWAITING_APPROVAL),
    ], (node["serial"], moves)
