"""Two sites in the lab (issue 33): each hall's BMCs hear only that hall's workers, and a hall
left without a worker waits, saying why, while the other carries on.

A lab of four nodes, two racks: rack 1 in site hall-a, rack 2 in hall-b, both with their own
workers, one real `celery worker --site` each, beside the central worker and beat. Every lab BMC
counts the User-Agent of each request, which names the worker and its site.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from common.user_agent import PRODUCT
from fleet.models import Rack, Site, SiteWorker
from lab import processes
from lab.run import LabRun, LabRunConfig
from provisioning.choices import ACTIVE_RUN_STATUSES, PhaseStatus, RunStatus
from provisioning.models import PhaseRecord, Run
from provisioning.site_work import HELD_PREFIX
from tests.support.slurm import until

SITES = ("hall-a", "hall-b")


def _site_worker(lab: LabRun, site: str, name: str, tmp_path: Path) -> subprocess.Popen:
    """A real `celery worker --site SITE`, as a hall's machine runs it."""
    with (tmp_path / f"{name}.log").open("ab") as log:
        return processes.start_worker(
            lab.env, concurrency=4, name=name, log=log, extra_args=("--site", site)
        )


def _agents_of(site: str) -> set[str]:
    """The User-Agents the site's workers (every one that ever reported) send."""
    names = SiteWorker.objects.filter(site__name=site).values_list("name", flat=True)
    return {f"{PRODUCT} (site={site}; worker={name})" for name in names}


def _active(runs: list[Run]) -> list[int]:
    active = Run.objects.filter(pk__in=[r.pk for r in runs], status__in=ACTIVE_RUN_STATUSES)
    return list(active.values_list("pk", flat=True))


def _reasons(runs: list[Run]) -> set[str]:
    return set(
        Run.objects.filter(pk__in=[r.pk for r in runs]).values_list("wait_reason", flat=True)
    )


# Real processes (web, node plane, beat, a central and two site workers) on a busy 2-core
# machine: about a minute and a half.
@pytest.mark.timeout(400)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_each_hall_hears_only_its_workers_and_a_hall_without_one_waits(tmp_path):
    for name in SITES:
        Site.objects.create(name=name, own_workers=True)
    config = LabRunConfig(
        nodes=4, racks=2, site="hall-a", faults="none", speed=400, soak_hours=0.25,
        concurrency=4, timeout_s=240,
    )  # fmt: skip
    with LabRun(config, log_dir=tmp_path) as lab:
        # The second rack stands in the other hall (an operator moves it there).
        Rack.objects.filter(name=f"{config.rack}-02").update(site=Site.objects.get(name="hall-b"))
        at = {"hall-a": lab.hall.nodes[:2], "hall-b": lab.hall.nodes[2:]}
        # Enrollment was the operator's, from this process: from here on, only the runs call.
        for lab_node in lab.hall.nodes:
            lab_node.origins.clear()
        workers = {site: _site_worker(lab, site, site, tmp_path) for site in SITES}
        try:
            runs = lab.start_pass()
            # Enrolled in order, two to a rack.
            by_site = {"hall-a": lab.nodes[:2], "hall-b": lab.nodes[2:]}
            by_site = {site: [runs[n.pk] for n in nodes] for site, nodes in by_site.items()}
            hall_b = by_site["hall-b"]
            # hall-b's runs are under way (a phase done on each), then its only worker stops.
            until(
                lambda: PhaseRecord.objects.filter(run__in=hall_b, status=PhaseStatus.DONE)
                .values("run").distinct().count() == len(hall_b),
                "hall-b's runs to be under way", timeout=120,
            )  # fmt: skip
            processes.stop(workers.pop("hall-b"))
            until(
                lambda: all(r.startswith(HELD_PREFIX + "hall-b: ") for r in _reasons(hall_b)),
                "hall-b's runs to wait for a worker of their site",
            )
            assert "worker --site hall-b" in _reasons(hall_b).pop()
            heard = [n.requests for n in at["hall-b"]]

            # hall-a is not held up: its runs finish while hall-b's wait.
            until(lambda: not _active(by_site["hall-a"]), "hall-a's runs to end", timeout=180)
            assert len(_active(hall_b)) == len(hall_b), "hall-b's runs must wait, not fail"
            assert all(r.startswith(HELD_PREFIX) for r in _reasons(hall_b))
            # Nobody else reached hall-b's BMCs meanwhile: its work waited in its own queue.
            assert [n.requests for n in at["hall-b"]] == heard

            # A worker of hall-b again: its runs are released and end where they would have.
            workers["hall-b"] = _site_worker(lab, "hall-b", "hall-b-again", tmp_path)
            until(
                lambda: not any(r.startswith(HELD_PREFIX) for r in _reasons(hall_b)),
                "hall-b's runs to be released",
            )
            until(lambda: not _active(hall_b), "hall-b's runs to end", timeout=180)
        finally:
            for worker in workers.values():
                processes.stop(worker)
        for run in runs.values():
            run.refresh_from_db()
            assert run.status == RunStatus.SUCCEEDED, (run.node.serial, run.last_error)
        # Every request at a hall's BMCs came from a worker of that hall, and each hall's
        # workers did call (a BMC hearing nobody would pass the first check vacuously).
        for site, lab_nodes in at.items():
            agents = _agents_of(site)
            for lab_node in lab_nodes:
                assert lab_node.origins, f"{lab_node.serial} heard nobody"
                assert set(lab_node.origins) <= agents, (site, dict(lab_node.origins), agents)
        assert len(_agents_of("hall-b")) == 2
        resumed = next(a for a in _agents_of("hall-b") if "hall-b-again-" in a)
        assert all(n.origins[resumed] for n in at["hall-b"]), "hall-b resumed by another worker"
