"""`manage.py bench_views --nodes 5000 [--repeat 20] [--json docs/bench-views-5000.json]`.

A benchmark, not a test: the server time and queries of the pages a person reads at fleet size
(the fleet overview, a site, a rack, its snapshot, the firmware view with its API and CSV, a page
of the node list in the API and in the admin), each requested `--repeat` times through
django.test.Client, in this process: middleware, view, queries and template, no network.

The fleet is lab.synthetic_fleet's, written into the configured database (point DATABASE_URL at
a scratch one): built when the database has no node, grown when it holds a smaller synthetic
fleet, and refused when it holds nodes of anything else. It is kept, so a second run measures at
once. On PostgreSQL the tables are ANALYZEd after the build, as autovacuum would in time.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client
from django.urls import reverse

from fleet.models import Component, Node
from fleet.roles import FLEET_ADMIN

from ...synthetic_fleet import Fleet, build_fleet, existing_fleet, fleet_of

BENCH_USER = "bench-views"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], cwd=settings.BASE_DIR, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return ""
    return out.stdout.strip()


class QueryCounter:
    """Counts the queries a connection runs while this is one of its execute wrappers."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


class Command(BaseCommand):
    help = "Time the fleet's pages (overview, rack, firmware, node lists) at N synthetic nodes."

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=5000)
        parser.add_argument("--repeat", type=int, default=20, help="timed requests per page")
        parser.add_argument("--json", dest="json_path", default="", help="write the results here")
        parser.add_argument(
            "--pages", default="", help="only these pages, comma-separated (default: all)"
        )

    def handle(self, *args, **opts):
        started = time.perf_counter()
        fleet = self.fleet(opts["nodes"])
        built_s = time.perf_counter() - started
        client = self.client()
        only = {name for name in opts["pages"].split(",") if name}
        pages = {
            name: self.measure(client, url, opts["repeat"])
            for name, url in self.pages(fleet).items()
            if not only or name in only
        }
        result = {
            "database": connection.vendor,
            "nodes": fleet.nodes,
            "components": Component.objects.count(),
            "racks": len(fleet.racks),
            "sites": len(fleet.sites),
            "repeat": opts["repeat"],
            "fleet_ready_s": round(built_s, 1),
            "commit": _git("rev-parse", "--short", "HEAD"),
            # A tree with uncommitted changes is nobody's commit: say so beside it.
            "uncommitted_changes": bool(_git("status", "--porcelain", "--untracked-files=no")),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "pages": pages,
        }
        self.report(result)
        if opts["json_path"]:
            path = Path(opts["json_path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result, indent=2) + "\n")
            self.stdout.write(f"wrote {path}")

    def fleet(self, nodes: int) -> Fleet:
        have = existing_fleet()
        if have is None:
            raise CommandError(
                "the database holds nodes that are not the synthetic fleet's: "
                "point DATABASE_URL at a scratch database"
            )
        if have < nodes:
            self.stdout.write(f"building nodes {have}..{nodes - 1} ...")
            build_fleet(nodes - have, first=have)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
        elif have > nodes:
            raise CommandError(f"the database already holds {have} synthetic nodes, not {nodes}")
        return fleet_of(nodes)

    def client(self) -> Client:
        user = User.objects.filter(username=BENCH_USER).first()
        if user is None:
            user = User.objects.create_user(BENCH_USER, is_staff=True)
            user.groups.add(Group.objects.get(name=FLEET_ADMIN))
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        return client

    def pages(self, fleet: Fleet) -> dict[str, str]:
        # A full rack in the middle of the fleet, of the first site.
        rack = fleet.racks[(len(fleet.racks) // 2) & ~1]
        node = Node.objects.filter(rack=rack).order_by("position").first()
        # The older SKU's published manifest: a third of that SKU's nodes are on the one before.
        behind_of = fleet.manifests[("hgx-h100-8gpu", "1.1.0")]
        return {
            "overview": reverse("console:overview"),
            "site": reverse("console:site", args=[fleet.sites[0].pk]),
            "rack": reverse("console:rack", args=[rack.pk]),
            "rack_with_panel": f"{reverse('console:rack', args=[rack.pk])}?node={node.pk}",
            "rack_snapshot": reverse("console:rack-snapshot", args=[rack.pk]),
            "firmware": reverse("console:firmware"),
            "firmware_api": reverse("api:firmware-list"),
            "firmware_csv": reverse("api:firmware-export-csv"),
            "nodes_api_page": reverse("api:node-list"),
            "behind_api_page": reverse("api:manifest-behind", args=[behind_of.pk]),
            "nodes_admin_page": reverse("admin:fleet_node_changelist"),
        }

    def get(self, client: Client, url: str):
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if response.status_code != 200:
            raise CommandError(f"{url}: {response.status_code} {body[:300]!r}")
        return body

    def measure(self, client: Client, url: str, repeat: int) -> dict:
        counter = QueryCounter()
        # A wrapper, not CaptureQueriesContext: the request_started signal empties the log that
        # one reads. The timed requests go without it.
        with connection.execute_wrapper(counter):
            body = self.get(client, url)  # also warms the caches (templates, permissions)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            self.get(client, url)
            times.append((time.perf_counter() - t0) * 1000)
        return {
            "url": url,
            "queries": counter.count,
            "ms_median": round(statistics.median(times), 1),
            "ms_p95": round(_pct(times, 0.95), 1),
            "ms_max": round(max(times), 1),
            "bytes": len(body),
        }

    def report(self, result: dict) -> None:
        self.stdout.write(
            f"{result['nodes']} nodes, {result['components']} components, {result['racks']} "
            f"racks in {result['sites']} sites, on {result['database']} "
            f"({result['repeat']} requests a page)"
        )
        self.stdout.write(f"{'page':18} {'queries':>7} {'median ms':>10} {'p95 ms':>8} {'KiB':>7}")
        for name, page in result["pages"].items():
            self.stdout.write(
                f"{name:18} {page['queries']:7d} {page['ms_median']:10.1f} "
                f"{page['ms_p95']:8.1f} {page['bytes'] / 1024:7.0f}"
            )
