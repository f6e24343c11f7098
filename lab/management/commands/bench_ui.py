"""Benchmark the live board: page server time and queries, and event-to-browser latency.

    python manage.py bench_ui --racks 20 --nodes-per-rack 37 --json var/bench_ui.json

Runs against a throwaway database of its own (created, migrated and dropped here), a real daphne
serving greenlight.asgi, and WebSocket clients watching a site and a rack while a producer thread
moves nodes through their bring-up. Not a test: it prints numbers.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import subprocess
import threading
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from fleet.choices import EventKind
from fleet.choices import NodeState as S
from fleet.events import record
from fleet.lifecycle import transition
from fleet.manifests import parse_manifest  # noqa: F401  (the sample must parse)
from fleet.models import Manifest, Node, Rack, Site, Sku
from fleet.roles import SITE_TECH
from provisioning.choices import PhaseStatus, RunStatus
from provisioning.core.phases import PHASES
from provisioning.models import PhaseRecord, Run

from ... import processes

ROOT = Path(settings.BASE_DIR)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Command(BaseCommand):
    help = "Benchmark the site overview, the rack page and the live feed's latency."

    def add_arguments(self, parser):
        parser.add_argument("--racks", type=int, default=20)
        parser.add_argument("--nodes-per-rack", type=int, default=37)
        parser.add_argument("--repeat", type=int, default=15, help="requests per page")
        parser.add_argument("--events", type=int, default=3000, help="events to produce")
        parser.add_argument("--rate", type=float, default=300.0, help="events per second")
        parser.add_argument("--json", dest="json_path", default="")

    def handle(self, *args, **opts):
        prefix = f"greenlight-bench-{os.getpid()}"
        settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = prefix
        test = connection.settings_dict.setdefault("TEST", {})
        if connection.vendor == "sqlite":
            test["NAME"] = str(Path(settings.VAR_DIR) / "bench_ui.sqlite3")
        else:
            test["NAME"] = f"bench_ui_{connection.settings_dict['NAME']}"
        old_name = connection.creation.create_test_db(
            verbosity=0, autoclobber=True, serialize=False
        )
        try:
            result = self.run_bench(opts, prefix)
        finally:
            connections.close_all()
            connection.creation.destroy_test_db(old_name, verbosity=0)
        text = json.dumps(result, indent=2)
        self.stdout.write(text)
        if opts["json_path"]:
            Path(opts["json_path"]).parent.mkdir(parents=True, exist_ok=True)
            Path(opts["json_path"]).write_text(text + "\n")

    # --- the fleet ------------------------------------------------------------------------------

    def build(self, racks: int, per_rack: int):
        """A site mid bring-up: bench set-up writes states directly, as the lifecycle tests do."""
        from django.contrib.auth.models import Group, User

        sku = Sku.objects.create(
            name="hgx-h100-8gpu", gpu_count=8, nic_count=8, nic_line_rate_gbps=400,
            dpu_count=2, drive_count=8, nvlink_bandwidth_gbps=450,
        )  # fmt: skip
        manifest = Manifest(
            yaml_text=(ROOT / "acceptance/samples/hgx-h100-8gpu.manifest.yaml").read_text()
        )
        manifest.full_clean()
        manifest.save()
        manifest.publish()
        site = Site.objects.create(name="bench-hall")
        cycle = [S.ENROLLED] * 3 + [S.PROVISIONING] * 4 + [S.VALIDATING, S.AWAITING_APPROVAL]
        cycle += [S.IN_SERVICE] * 3 + [S.FAILED]
        nodes = []
        for r in range(racks):
            rack = Rack.objects.create(site=site, name=f"R{r + 1:02d}", height_u=max(42, per_rack))
            for u in range(1, per_rack + 1):
                n = r * per_rack + u
                nodes.append(
                    Node(
                        serial=f"B{n:06d}", sku=sku, rack=rack, position=u,
                        bmc_address=f"https://10.0.{n // 250}.{n % 250}", bmc_username="root",
                        state=cycle[n % len(cycle)],
                    )
                )  # fmt: skip
        Node.objects.bulk_create(nodes, batch_size=500)
        runs = [
            Run(node=n, manifest=manifest, status=RunStatus.RUNNING, current_phase="nvme_firmware")
            for n in Node.objects.filter(state__in=[S.PROVISIONING, S.VALIDATING])
        ]
        Run.objects.bulk_create(runs, batch_size=500)
        records = [
            PhaseRecord(run=run, phase=p.name, order=i, status=PhaseStatus.DONE)
            for run in Run.objects.all()
            for i, p in enumerate(PHASES[:10])
        ]
        PhaseRecord.objects.bulk_create(records, batch_size=1000)
        user = User.objects.create_user("bench", password=secrets.token_urlsafe(16))
        user.groups.add(Group.objects.get(name=SITE_TECH))
        return site, list(Rack.objects.filter(site=site)), user

    # --- pages ----------------------------------------------------------------------------------

    def measure_pages(self, site, rack, user, repeat: int) -> dict:
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        node = rack.nodes.order_by("position").first()
        pages = {
            "overview": reverse("console:overview"),
            "site": reverse("console:site", args=[site.pk]),
            "rack": reverse("console:rack", args=[rack.pk]),
            "rack_with_panel": reverse("console:rack", args=[rack.pk]) + f"?node={node.pk}",
            "rack_snapshot": reverse("console:rack-snapshot", args=[rack.pk]),
        }
        out = {}
        for name, url in pages.items():
            client.get(url)  # warm caches (templates, permissions)
            times, queries = [], 0
            for _ in range(repeat):
                with CaptureQueriesContext(connection) as ctx:
                    t0 = time.perf_counter()
                    response = client.get(url)
                    times.append((time.perf_counter() - t0) * 1000)
                assert response.status_code == 200, (name, response.status_code)
                queries = len(ctx.captured_queries)
            out[name] = {
                "url": url,
                "ms_median": round(statistics.median(times), 2),
                "ms_p90": round(_pct(times, 0.9), 2),
                "queries": queries,
                "bytes": len(response.content),
            }
        return out

    # --- live latency ---------------------------------------------------------------------------

    def start_server(self, prefix: str) -> tuple[subprocess.Popen, int]:
        """daphne serving this benchmark's database, on a channel prefix of its own."""
        proc, url = processes.start_web(processes.child_env(CHANNEL_PREFIX=prefix))
        return proc, int(url.rsplit(":", 1)[1])

    def produce(self, site, count: int, rate: float, produced: dict, done: threading.Event):
        """Walk nodes through their bring-up at `rate` events/s; note when each event was made."""
        steps = {
            S.ENROLLED: S.PROVISIONING,
            S.PROVISIONING: S.VALIDATING,
            S.VALIDATING: S.AWAITING_APPROVAL,
            S.AWAITING_APPROVAL: S.IN_SERVICE,
            S.FAILED: S.PROVISIONING,
        }
        try:
            nodes = list(Node.objects.filter(rack__site=site).select_related("rack"))
            start = time.perf_counter()
            for i in range(count):
                node = nodes[(i * 7919) % len(nodes)]  # spread across racks, like a real hall
                t0 = time.perf_counter()
                if node.state in steps and i % 3 == 0:
                    event_id = transition(node, steps[node.state], actor_label="bench").event_id
                else:
                    event_id = record(node, EventKind.PHASE_DONE, actor_label="bench").pk
                produced[event_id] = (node.pk, t0)
                ahead = start + (i + 1) / rate - time.perf_counter()
                if ahead > 0:
                    time.sleep(ahead)  # pacing the producer, not waiting on a result
        finally:
            connections.close_all()
            done.set()

    async def watch(self, url: str, cookie: str, port: int, received: list, stop: asyncio.Event):
        import aiohttp

        headers = {"Origin": f"http://127.0.0.1:{port}", "Cookie": f"sessionid={cookie}"}
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(url, headers=headers) as ws:
                stop_task = asyncio.ensure_future(stop.wait())
                while not stop.is_set():
                    recv = asyncio.ensure_future(ws.receive())
                    finished, _ = await asyncio.wait(
                        {recv, stop_task}, return_when=asyncio.FIRST_COMPLETED
                    )
                    if recv not in finished:
                        recv.cancel()
                        break
                    msg = recv.result()
                    if msg.type != aiohttp.WSMsgType.TEXT:
                        break
                    received.append((time.perf_counter(), json.loads(msg.data)))

    def measure_live(self, site, rack, user, prefix, count, rate) -> dict:
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        proc, port = self.start_server(prefix)
        produced: dict[int, tuple[int, float]] = {}
        streams = {"site": [], "rack": []}
        try:

            async def run():
                stop = asyncio.Event()
                base = f"ws://127.0.0.1:{port}"
                watchers = [
                    asyncio.ensure_future(
                        self.watch(
                            f"{base}/ws/site/{site.pk}/", cookie, port, streams["site"], stop
                        )
                    ),
                    asyncio.ensure_future(
                        self.watch(
                            f"{base}/ws/rack/{rack.pk}/", cookie, port, streams["rack"], stop
                        )
                    ),
                ]
                await asyncio.sleep(0.5)  # let both sockets join their groups before producing
                done = threading.Event()
                producer = threading.Thread(
                    target=self.produce, args=(site, count, rate, produced, done)
                )
                producer.start()
                while not done.is_set():
                    await asyncio.sleep(0.05)
                # Give the last window time to flush: two coalescing windows plus slack.
                await asyncio.sleep(2 * settings.GREENLIGHT_LIVE_COALESCE_MS / 1000 + 0.5)
                stop.set()
                await asyncio.gather(*watchers, return_exceptions=True)
                producer.join()

            asyncio.run(run())
        finally:
            processes.stop(proc)
        rack_nodes = set(rack.nodes.values_list("pk", flat=True))
        return {
            "events_produced": len(produced),
            "rate_per_s": rate,
            "coalesce_ms": settings.GREENLIGHT_LIVE_COALESCE_MS,
            "site_socket": self.latencies(streams["site"], produced, None),
            "rack_socket": self.latencies(streams["rack"], produced, rack_nodes),
        }

    def latencies(self, stream, produced, only_nodes) -> dict:
        """Each event's latency is when the first batch naming its node at or past its seq came."""
        pending: dict[int, list[tuple[int, float]]] = {}
        for seq, (node_id, t0) in sorted(produced.items()):
            if only_nodes is None or node_id in only_nodes:
                pending.setdefault(node_id, []).append((seq, t0))
        lat = []
        for t_recv, batch in stream:
            for key, change in batch.get("nodes", {}).items():
                queue = pending.get(int(key), [])
                while queue and queue[0][0] <= change["seq"]:
                    lat.append((t_recv - queue.pop(0)[1]) * 1000)
        missed = sum(len(q) for q in pending.values())
        return {
            "messages": len(stream),
            "events_delivered": len(lat),
            "events_missed": missed,
            "p50_ms": round(_pct(lat, 0.5), 1),
            "p99_ms": round(_pct(lat, 0.99), 1),
            "max_ms": round(max(lat), 1) if lat else None,
        }

    def run_bench(self, opts, prefix) -> dict:
        t0 = time.perf_counter()
        site, racks, user = self.build(opts["racks"], opts["nodes_per_rack"])
        built_s = time.perf_counter() - t0
        rack = racks[len(racks) // 2]
        pages = self.measure_pages(site, rack, user, opts["repeat"])
        live = self.measure_live(site, rack, user, prefix, opts["events"], opts["rate"])
        return {
            "database": connection.vendor,
            "racks": opts["racks"],
            "nodes": opts["racks"] * opts["nodes_per_rack"],
            "build_s": round(built_s, 2),
            "pages": pages,
            "live": live,
        }
