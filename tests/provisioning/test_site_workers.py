"""Sites in the work (issue 33): a site with its own workers gets its runs' steps on its own
queue, served by workers started with --site in its hall; while none is alive its runs wait,
saying why, and a worker coming back releases them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.choices import EventKind, NodeState
from fleet.models import Event, Site, SiteWorker
from fleet.roles import SITE_TECH
from lab.processes import child_env, start_worker, stop
from provisioning.boot.credentials import ephemeral_credential, kernel_args
from provisioning.boot.path import media_url
from provisioning.choices import RunStatus
from provisioning.core.engine import advance
from provisioning.models import Run
from provisioning.scheduling import send_step
from provisioning.site_work import (
    HELD_PREFIX,
    hold_runs_of_unserved_sites,
    live_workers,
    node_plane_urls,
    queue_for_run,
    record_worker_alive,
    record_worker_stopped,
    site_queue,
    site_service,
)
from provisioning.tasks import sweep as sweep_task
from tests import factories
from tests.support.scenes import make_run, walk
from tests.support.slurm import until


def _run_at(site: str, status: str = RunStatus.WAITING) -> Run:
    rack = factories.make_rack(f"R-{site}", site=site)
    node = walk(factories.make_node(rack=rack), NodeState.VALIDATING)
    return make_run(node, status=status)


def _own_workers(name: str) -> Site:
    Site.objects.filter(name=name).update(own_workers=True)
    site = Site.objects.get(name=name)
    site.save()  # a save in this process drops the cached list of such sites
    return site


@pytest.mark.django_db
def test_steps_stay_central_without_a_query_until_a_site_has_its_own_workers(
    django_assert_num_queries,
):
    berlin = _run_at("berlin")
    oslo = _run_at("oslo")
    Site.objects.get(name="berlin").save()
    queue_for_run(berlin.pk)  # the list of sites with own workers is read once, then cached
    with django_assert_num_queries(0):
        assert queue_for_run(berlin.pk) is None
    _own_workers("berlin")
    assert queue_for_run(berlin.pk) == site_queue("berlin")
    assert queue_for_run(oslo.pk) is None


@pytest.mark.django_db
def test_a_site_without_a_live_worker_holds_its_runs_and_says_why():
    held = _run_at("berlin")
    elsewhere = _run_at("oslo")
    site = _own_workers("berlin")
    now = timezone.now()
    assert hold_runs_of_unserved_sites(now=now) == 1
    assert hold_runs_of_unserved_sites(now=now) == 0  # already saying so: not written again
    held.refresh_from_db()
    elsewhere.refresh_from_db()
    assert held.wait_reason.startswith(HELD_PREFIX + "berlin: none has ever reported")
    assert "worker --site berlin" in held.wait_reason
    assert not elsewhere.wait_reason.startswith(HELD_PREFIX)
    assert held.status == RunStatus.WAITING  # waits, never fails

    # A worker of the site reports: its runs are released, and the site is served.
    assert record_worker_alive("berlin", "w1@hall-b", now=now) is True
    held.refresh_from_db()
    assert held.wait_reason == ""
    assert record_worker_alive("berlin", "w1@hall-b", now=now + timedelta(seconds=30)) is False
    assert live_workers(site, now=now + timedelta(seconds=60)) == ["w1@hall-b"]
    assert hold_runs_of_unserved_sites(now=now + timedelta(seconds=60)) == 0

    # Silent past three beats: gone, and the run waits again with when it was last seen.
    later = now + timedelta(seconds=200)
    assert [s.served for s in site_service(now=later)] == [False]
    assert hold_runs_of_unserved_sites(now=later) == 1
    held.refresh_from_db()
    assert f"none alive since {now + timedelta(seconds=30):%Y-%m-%d %H:%M}" in held.wait_reason


@pytest.mark.django_db
def test_a_worker_that_stops_cleanly_leaves_its_site_unserved_at_once():
    site = _own_workers(_run_at("berlin").node.rack.site.name)
    now = timezone.now()
    record_worker_alive("berlin", "w1@hall-b", now=now)
    record_worker_stopped("berlin", "w1@hall-b", now=now)
    assert live_workers(site, now=now) == []


@pytest.mark.django_db
def test_a_heartbeat_for_a_site_that_does_not_exist_is_refused():
    with pytest.raises(Site.DoesNotExist):
        record_worker_alive("atlantis", "w1@nowhere")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_worker_started_with_site_takes_that_sites_steps_and_reports_alive(tmp_path):
    run = _run_at("berlin")
    _own_workers("berlin")
    log_path = tmp_path / "site-worker.log"
    with open(log_path, "wb") as log:
        worker = start_worker(
            child_env(), concurrency=2, name="berlin", log=log, loglevel="INFO",
            extra_args=("--site", "berlin"),
        )  # fmt: skip
        try:
            until(
                lambda: SiteWorker.objects.filter(site__name="berlin", stopped_at=None).exists(),
                "the site worker's first heartbeat",
            )
            # A step of a berlin run goes to berlin's queue; this worker takes it (a step
            # number the run is not at, so taking it changes nothing).
            send_step(run.pk, run.step + 1000)
            until(
                lambda: "provisioning.tasks.advance_run" in log_path.read_text(errors="replace"),
                "the site worker to take the berlin step",
            )
        finally:
            stop(worker)
    assert site_queue("berlin") in log_path.read_text(errors="replace")
    # A clean shutdown says so: the site has no live worker from now.
    assert SiteWorker.objects.get(site__name="berlin").stopped_at is not None


@pytest.mark.django_db
def test_metrics_show_live_workers_per_site_with_its_own(client):
    _run_at("berlin")
    _run_at("oslo")
    _own_workers("berlin")
    _own_workers("oslo")
    record_worker_alive("oslo", "w1@hall-o")
    record_worker_alive("oslo", "w2@hall-o")
    text = client.get("/metrics").content.decode()
    assert 'greenlight_site_workers{site="berlin"} 0.0' in text
    assert 'greenlight_site_workers{site="oslo"} 2.0' in text


@pytest.mark.django_db
def test_a_site_with_its_own_node_plane_boots_and_hears_its_nodes_there(
    settings, django_assert_num_queries
):
    settings.GREENLIGHT_AGENT_URL = settings.GREENLIGHT_BOOT_MEDIA_URL = "https://central:8443"
    berlin = ephemeral_credential(_run_at("berlin"))
    oslo = ephemeral_credential(_run_at("oslo"))
    Site.objects.get(name="oslo").save()
    node_plane_urls(oslo.node_id)  # read once, then cached
    with django_assert_num_queries(0):
        assert media_url(oslo).startswith("https://central:8443/boot/v1/media/")
    site = Site.objects.get(name="berlin")
    site.node_plane_url = "https://greenlight.berlin.example:8443/"
    site.save()
    assert media_url(berlin) == (
        f"https://greenlight.berlin.example:8443/boot/v1/media/{berlin.media_key}.iso"
    )
    assert "greenlight.url=https://greenlight.berlin.example:8443 " in kernel_args(berlin) + " "
    assert media_url(oslo).startswith("https://central:8443/")
    assert "greenlight.url=https://central:8443 " in kernel_args(oslo) + " "


@pytest.mark.django_db
def test_a_worker_taking_over_a_lapsed_lease_says_from_whom_and_why():
    run = _run_at("berlin", status=RunStatus.RUNNING)
    lapsed = timezone.now() - timedelta(seconds=5)
    Run.objects.filter(pk=run.pk).update(next_look_at=lapsed, held_by="w1@hall-b")
    advance(run.pk, run.step, worker="w2@hall-b")
    run.refresh_from_db()
    assert run.held_by == "w2@hall-b"
    event = Event.objects.get(node=run.node, kind=EventKind.RUN_TAKEN_OVER)
    assert event.actor_label == "w2@hall-b"
    assert "w2@hall-b took the run over" in event.message and "from w1@hall-b" in event.message
    assert "lease lapsed unrenewed" in event.message
    assert (event.data["from"], event.data["to"], event.data["run"]) == (
        "w1@hall-b",
        "w2@hall-b",
        run.pk,
    )


@pytest.mark.django_db
def test_a_step_on_a_live_lease_is_no_takeover():
    run = _run_at("berlin", status=RunStatus.WAITING)
    Run.objects.filter(pk=run.pk).update(next_look_at=timezone.now(), held_by="w1@hall-b")
    advance(run.pk, run.step, worker="w2@hall-b")
    assert not Event.objects.filter(kind=EventKind.RUN_TAKEN_OVER).exists()


@pytest.mark.django_db
def test_the_periodic_sweep_holds_the_runs_of_a_site_left_without_workers():
    held = _run_at("berlin")
    _own_workers("berlin")
    sweep_task.apply()
    held.refresh_from_db()
    assert held.wait_reason.startswith(HELD_PREFIX + "berlin")


@pytest.mark.django_db
def test_the_overview_says_which_site_has_no_live_worker(client):
    _run_at("berlin")
    _run_at("oslo")
    _own_workers("berlin")
    _own_workers("oslo")
    record_worker_alive("oslo", "w1@hall-o")
    client.force_login(factories.make_user("tess", SITE_TECH))
    page = client.get("/").content.decode()
    assert 'data-unserved-site="berlin"' in page and "none has ever reported" in page
    assert "worker --site berlin" in page
    assert 'data-unserved-site="oslo"' not in page
    oslo = Site.objects.get(name="oslo")
    assert 'data-unserved-site="berlin"' not in client.get(f"/sites/{oslo.pk}/").content.decode()
