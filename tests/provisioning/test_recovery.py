"""Runs survive a worker killed mid-phase and a Redis that loses everything.

The database is the source of truth: a killed worker's step is taken over once its lease lapses,
and a run whose next message vanished with Redis is found by the sweep and sent again. Every
phase observes before it applies, so nothing is flashed twice.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest
import redis

from common.embedded_redis import ensure_embedded_redis, stop_embedded_redis
from fleet.choices import EventKind
from fleet.models import Event
from greenlight.celery import app
from lab import processes
from lab.run import LabRun, LabRunConfig
from provisioning.choices import PhaseStatus
from provisioning.models import AgentCommand, PhaseRecord


def _wait_for(condition, what: str, run, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    phases = list(run.phases.values_list("phase", "status", "stage", "wait_reason", "error"))
    raise AssertionError(f"timed out waiting for {what}: {phases}")


def _firmware_flashes(lab_node) -> dict[str, int]:
    # Counted from what the BMC accepted, not its task list: the iDRAC job queue is cleared
    # before each update is staged, which forgets the earlier jobs.
    counts: dict[str, int] = {}
    for component in lab_node.flashes:
        counts[component] = counts.get(component, 0) + 1
    return counts


# A real rack through real processes: minutes on a busy 2-core machine.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_worker_killed_mid_firmware_phase_resumes_and_flashes_each_component_once(tmp_path):
    # Two nodes: the fabric gate needs a partner in the rack.
    config = LabRunConfig(nodes=2, faults="none", speed=150, soak_hours=0.25, timeout_s=300)
    with LabRun(config, log_dir=tmp_path) as lab:
        # The worst moment to die: the BMC has accepted the BIOS update (its task runs) and the
        # worker is still waiting for the answer, so nothing it wrote says the update was sent.
        # The first node's BMC holds that answer past the client's timeout, which pins the worker
        # in exactly that window: no sleep, no race (had it timed out first, it would still never
        # have learnt that the update was accepted).
        held = lab.hall.nodes[0]
        lab.hall.set_fault(0, "update_answer_held:bios")
        runs = lab.start_pass()
        run = runs[lab.nodes[0].pk]
        _wait_for(
            lambda: _firmware_flashes(held).get("bios") == 1,
            "the BMC to accept the BIOS update",
            run,
        )
        processes.kill(lab.workers.pop())
        lab.add_worker(name="replacement")
        assert lab.wait(runs)
        # The replacement said whose lapsed lease it took, and at which phase.
        takeovers = Event.objects.filter(node=lab.nodes[0], kind=EventKind.RUN_TAKEN_OVER)
        takeover = takeovers.order_by("pk").first()
        assert takeover is not None, "the replacement took the run over without saying so"
        assert takeover.data["from"].startswith("lab0-"), takeover.data
        assert takeover.data["to"].startswith("replacement-"), takeover.data
        assert "at bios_firmware from lab0-" in takeover.message
        for run in runs.values():
            run.refresh_from_db()
            assert run.status == "succeeded", run.last_error
            flashed = AgentCommand.objects.filter(run=run, kind="flash_firmware")
            assert sorted(c.params["component"] for c in flashed) == ["dpu", "nic", "nvme"]
            bios = PhaseRecord.objects.get(run=run, phase="bios_firmware")
            assert bios.status == PhaseStatus.DONE and len(bios.changes) == 1
        for lab_node in lab.hall.nodes:
            assert _firmware_flashes(lab_node) == {"bmc": 1, "bios": 1, "hgx": 1}


@contextmanager
def own_redis(var_dir):
    """A Redis of this test's own, so flushing it touches no other test."""
    url = ensure_embedded_redis(var_dir)
    previous = app.conf.broker_url
    _use_broker(url.replace("unix://", "redis+socket://"))
    try:
        yield url
    finally:
        _use_broker(previous)
        stop_embedded_redis(var_dir)


def _use_broker(url: str) -> None:
    # New pools for the new broker; the old ones are left open for whoever still holds them.
    app.conf.broker_url = url
    app._pool = None
    app.amqp._producer_pool = None


# A real rack through real processes: minutes on a busy 2-core machine.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_flushed_redis_loses_no_run(tmp_path, settings):
    with own_redis(tmp_path / "redis") as url:
        settings.REDIS_URL = url
        config = LabRunConfig(
            nodes=2,
            faults="none",
            speed=150,
            soak_hours=0.25,
            timeout_s=300,
            extra_env={"CELERY_BROKER_URL": url.replace("unix://", "redis+socket://")},
        )
        with LabRun(config, log_dir=tmp_path) as lab:
            runs = lab.start_pass()
            run = next(iter(runs.values()))
            _wait_for(
                lambda: PhaseRecord.objects.filter(
                    run=run, phase="hgx_firmware", stage="updating"
                ).exists(),
                "the HGX update to be under way",
                run,
            )
            # The worker goes (its pending messages back to Redis), then Redis loses them all.
            processes.stop(lab.workers.pop())
            client = redis.Redis.from_url(url)
            client.flushall()
            assert client.dbsize() == 0
            step_before = type(run).objects.get(pk=run.pk).step
            lab.add_worker(name="after-flush")
            assert lab.wait(runs)
            run.refresh_from_db()
            assert run.step > step_before
            for each in runs.values():
                each.refresh_from_db()
                assert each.status == "succeeded", each.last_error
            for lab_node in lab.hall.nodes:
                assert _firmware_flashes(lab_node) == {"bmc": 1, "bios": 1, "hgx": 1}
