"""Sites in the work: a site whose management network only its own hall reaches has its runs'
steps (Redfish acts and looks, boot media, the agents' work) sent to the site's own queue,
served by workers started there with `--site NAME`; every other task stays central. Its nodes
may fetch boot media and report to a node plane of its own (`node_plane_url`).

A site worker says it is alive every SITE_WORKER_BEAT_S. A site with its own workers and none
alive holds its runs: they wait, with the reason written where the operator reads it, instead
of failing, and take up where they were when a worker comes back.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Max, Q
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from fleet.models import Node, Site, SiteWorker

from .choices import ACTIVE_RUN_STATUSES, RunStatus
from .models import Run

# How often a site worker says it is alive, and how long a silence counts as gone.
SITE_WORKER_BEAT_S = 30.0
SITE_WORKER_SILENCE_S = 3 * SITE_WORKER_BEAT_S
# What a held run's wait_reason starts with: cleared once a worker of its site is back.
HELD_PREFIX = "waiting for a worker of site "
# Which sites route their work elsewhere changes rarely (an admin's edit) and steps and boots
# ask often, so each process keeps the answer this long (and drops it at once on a local edit).
ROUTED_SITES_TTL_S = 30.0


@dataclass(frozen=True)
class SiteRouting:
    """Where a site's work goes: its own queue, its own node plane, or the central ones."""

    name: str
    own_workers: bool
    node_plane_url: str


_cache_lock = threading.Lock()
_cache: tuple[float, dict[int, SiteRouting]] | None = None


def site_queue(site_name: str) -> str:
    """The queue a site's workers consume."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}.site.{site_name}"


def routed_sites() -> dict[int, SiteRouting]:
    """The sites with their own workers or node plane, by id (cached ROUTED_SITES_TTL_S)."""
    global _cache
    now = time.monotonic()
    with _cache_lock:
        if _cache is not None and now - _cache[0] < ROUTED_SITES_TTL_S:
            return _cache[1]
    rows = Site.objects.filter(Q(own_workers=True) | ~Q(node_plane_url="")).values_list(
        "pk", "name", "own_workers", "node_plane_url"
    )
    sites = {pk: SiteRouting(name, own, url.rstrip("/")) for pk, name, own, url in rows}
    with _cache_lock:
        _cache = (now, sites)
    return sites


def forget_routed_sites(**_: object) -> None:
    """Drop the cached answer (a site was saved or deleted in this process)."""
    global _cache
    with _cache_lock:
        _cache = None


post_save.connect(forget_routed_sites, sender=Site, dispatch_uid="site_work_forget_save")
post_delete.connect(forget_routed_sites, sender=Site, dispatch_uid="site_work_forget_delete")


def queue_for_run(run_id: int) -> str | None:
    """The queue a run's steps go to: its node's site's own, or None for the central one.
    No query while no site has its own workers."""
    if not any(site.own_workers for site in routed_sites().values()):
        return None
    row = (
        Run.objects.filter(pk=run_id, node__rack__site__own_workers=True)
        .values_list("node__rack__site__name", flat=True)
        .order_by()[:1]
    )
    return site_queue(row[0]) if row else None


def node_plane_urls(node_id: int) -> tuple[str, str]:
    """(agent URL, boot media URL) for a node: its site's own node plane when it has one,
    else the central settings. No query while no site has its own."""
    central = (settings.GREENLIGHT_AGENT_URL, settings.GREENLIGHT_BOOT_MEDIA_URL)
    sites = routed_sites()
    if not any(site.node_plane_url for site in sites.values()):
        return central
    site_id = Node.objects.filter(pk=node_id).values_list("rack__site_id", flat=True).first()
    routing = sites.get(site_id) if site_id is not None else None
    if routing is None or not routing.node_plane_url:
        return central
    return routing.node_plane_url, routing.node_plane_url


def record_worker_alive(site_name: str, worker: str, *, now: datetime | None = None) -> bool:
    """A site worker's heartbeat. Whether the site was without a live worker until now (its
    held runs are then released: their reason is cleared, and their steps, which waited in
    the site's queue, are taken by the worker)."""
    now = now or timezone.now()
    site = Site.objects.get(name=site_name)
    was_served = bool(live_workers(site, now=now))
    row, created = SiteWorker.objects.get_or_create(
        site=site, name=worker, defaults={"started_at": now, "seen_at": now}
    )
    if not created:
        fields = {"seen_at": now, "stopped_at": None}
        if row.stopped_at is not None or row.seen_at < now - _silence():
            fields["started_at"] = now
        SiteWorker.objects.filter(pk=row.pk).update(**fields)
    if not was_served:
        release_held_runs(site)
    return not was_served


def record_worker_stopped(site_name: str, worker: str, *, now: datetime | None = None) -> None:
    """A site worker shut down cleanly: it is gone now, not one silence from now."""
    SiteWorker.objects.filter(site__name=site_name, name=worker).update(
        stopped_at=now or timezone.now()
    )


def live_workers(site: Site, *, now: datetime | None = None) -> list[str]:
    """Names of the site's workers whose last heartbeat is within a silence."""
    now = now or timezone.now()
    return list(
        SiteWorker.objects.filter(_alive(now), site=site)
        .order_by("name")
        .values_list("name", flat=True)
    )


@dataclass(frozen=True)
class SiteService:
    """Whether a site with its own workers is served now, and since when it is not."""

    site: str
    live: int
    last_seen: datetime | None

    @property
    def served(self) -> bool:
        return self.live > 0

    def reason(self) -> str:
        """What its held runs wait for, in the words the operator reads."""
        seen = (
            f"none alive since {self.last_seen:%Y-%m-%d %H:%M} UTC"
            if self.last_seen
            else "none has ever reported"
        )
        text = (
            f"{HELD_PREFIX}{self.site}: {seen}; start one in its hall with "
            f"`celery -A greenlight worker --site {self.site}`"
        )
        return text[: Run._meta.get_field("wait_reason").max_length]


def site_service(*, now: datetime | None = None) -> list[SiteService]:
    """Every site with its own workers: how many are alive, and when one was last seen. One
    query."""
    now = now or timezone.now()
    rows = (
        Site.objects.filter(own_workers=True)
        .annotate(
            live=Count("workers", filter=_alive(now, "workers__")),
            last_seen=Max("workers__seen_at"),
        )
        .order_by("name")
        .values_list("name", "live", "last_seen")
    )
    return [SiteService(name, live, last_seen) for name, live, last_seen in rows]


def hold_runs_of_unserved_sites(*, now: datetime | None = None) -> int:
    """Write why each waiting run of a site without a live worker waits; how many runs were
    not saying so yet."""
    held = 0
    for service in site_service(now=now):
        if service.served:
            continue
        reason = service.reason()
        # Only runs not already saying so: a site down for hours is not rewritten every sweep.
        held += (
            Run.objects.filter(
                node__rack__site__name=service.site,
                status__in=(RunStatus.QUEUED, RunStatus.WAITING),
            )
            .exclude(wait_reason=reason)
            .update(wait_reason=reason)
        )
    return held


def release_held_runs(site: Site) -> int:
    """Clear the held reason of a site's runs (a worker of it is alive again); how many."""
    return Run.objects.filter(
        node__rack__site=site,
        status__in=ACTIVE_RUN_STATUSES,
        wait_reason__startswith=HELD_PREFIX,
    ).update(wait_reason="")


def _silence() -> timedelta:
    return timedelta(seconds=SITE_WORKER_SILENCE_S)


def _alive(now: datetime, prefix: str = "") -> Q:
    """A worker heard within a silence and not stopped (`prefix` reaches it from a site)."""
    return Q(**{f"{prefix}stopped_at__isnull": True, f"{prefix}seen_at__gte": now - _silence()})
