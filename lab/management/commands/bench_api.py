"""`manage.py bench_api --nodes 10000 --components 30 [--json var/bench_api.json]`.

A benchmark, not a test: fills the database with N nodes of M components each (bulk_create,
inside a transaction that is rolled back at the end unless --keep), then measures
- the JSON API: every page of /api/v1/nodes/ (cursor pagination), its time and query count;
- the CSV export: its total time, and its peak Python memory under tracemalloc (a second pass).
"""

from __future__ import annotations

import json
import secrets
import statistics
import time
import tracemalloc
from pathlib import Path

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from acceptance.choices import Verdict
from acceptance.gates import GateName
from acceptance.models import GateResult
from fleet.choices import ComponentKind, DocumentStatus
from fleet.models import Component, Manifest, Node, Rack, Site, Sku
from fleet.roles import DCIM_READER
from provisioning.choices import RunStatus
from provisioning.models import Run

SAMPLE_MANIFEST = Path(__file__).resolve().parents[2] / "samples" / "hgx-h100-8gpu.manifest.yaml"
PART_KINDS = [ComponentKind.GPU] * 8 + [ComponentKind.NIC] * 8 + [ComponentKind.DPU] * 2
PART_KINDS += [ComponentKind.NVME] * 8 + [ComponentKind.NVSWITCH] * 4
PART_KINDS += [ComponentKind.BMC, ComponentKind.BIOS, ComponentKind.HGX, ComponentKind.CPU]


class Rollback(Exception):
    pass


class Command(BaseCommand):
    help = "Benchmark the JSON node list and the CSV export on a large synthetic fleet."

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=10000)
        parser.add_argument("--components", type=int, default=30)
        parser.add_argument("--page-size", type=int, default=1000)
        parser.add_argument("--json", dest="json_path", help="Write the results here too")
        parser.add_argument("--keep", action="store_true", help="Keep the synthetic fleet")

    def handle(self, *args, **options):
        results: dict = {}
        try:
            with transaction.atomic():
                results["setup_s"] = self.populate(options["nodes"], options["components"])
                client = self.client()
                results["json"] = self.bench_json(client, options["page_size"])
                results["csv"] = self.bench_csv(client)
                if not options["keep"]:
                    raise Rollback
        except Rollback:
            pass
        results.update(
            nodes=options["nodes"],
            components_per_node=options["components"],
            database=connection.vendor,
        )
        self.report(results)
        if options["json_path"]:
            path = Path(options["json_path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(results, indent=2) + "\n")
            self.stdout.write(f"wrote {path}")

    # --- the synthetic fleet ----------------------------------------------------------------

    def populate(self, n_nodes: int, n_components: int) -> float:
        started = time.perf_counter()
        sku, _ = Sku.objects.get_or_create(
            name="hgx-h100-8gpu",
            defaults=dict(gpu_count=8, nic_count=8, nic_line_rate_gbps=400, drive_count=8),
        )
        manifest = Manifest.objects.filter(sku=sku).first()
        if manifest is None:
            manifest = Manifest(yaml_text=SAMPLE_MANIFEST.read_text())
            manifest.full_clean()
            manifest.save()
            Manifest.objects.filter(pk=manifest.pk).update(status=DocumentStatus.PUBLISHED)
        site = Site.objects.create(name=f"bench-{time.time_ns()}")
        per_rack = 42
        racks = Rack.objects.bulk_create(
            Rack(site=site, name=f"B{i:04d}", height_u=per_rack)
            for i in range((n_nodes + per_rack - 1) // per_rack)
        )
        prefix = site.name.removeprefix("bench-")[-8:]
        nodes = Node.objects.bulk_create(
            (
                Node(
                    serial=f"BN{prefix}{i:07d}",
                    sku=sku,
                    rack=racks[i // per_rack],
                    position=i % per_rack + 1,
                    bmc_address=f"https://10.{i // 65536}.{i // 256 % 256}.{i % 256}",
                    bmc_username="root",
                    bmc_password=secrets.token_urlsafe(12),
                    mac_addresses=[
                        f"02:42:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}:01"
                    ],
                    manifest=manifest,
                )
                for i in range(n_nodes)
            ),
            batch_size=1000,
        )
        kinds = (PART_KINDS * (n_components // len(PART_KINDS) + 1))[:n_components]
        batch: list[Component] = []
        for node in nodes:
            for slot, kind in enumerate(kinds):
                batch.append(
                    Component(
                        node=node,
                        kind=kind,
                        slot=f"{kind.upper()} {slot}",
                        model=f"model-{kind}",
                        serial=f"{node.serial}-{slot:02d}",
                        part_number=f"PN-{kind}",
                        firmware_version="1.2.3",
                    )
                )
            if len(batch) >= 5000:
                Component.objects.bulk_create(batch)
                batch = []
        Component.objects.bulk_create(batch)
        runs = Run.objects.bulk_create(
            (Run(node=n, manifest=manifest, status=RunStatus.SUCCEEDED) for n in nodes),
            batch_size=1000,
        )
        GateResult.objects.bulk_create(
            (
                GateResult(run=r, node_id=r.node_id, gate=GateName.GPU_HEALTH, verdict=Verdict.PASS)
                for r in runs
            ),
            batch_size=1000,
        )
        return round(time.perf_counter() - started, 2)

    def client(self) -> APIClient:
        user = User.objects.create_user(f"bench-reader-{time.time_ns()}")
        user.groups.add(Group.objects.get(name=DCIM_READER))
        client = APIClient(SERVER_NAME="localhost")
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
        return client

    # --- measurements ----------------------------------------------------------------------

    def bench_json(self, client: APIClient, page_size: int) -> dict:
        pages = []
        url = f"/api/v1/nodes/?page_size={page_size}"
        while url:
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url)
                body = response.content
                elapsed = time.perf_counter() - started
            assert response.status_code == 200, body[:300]
            data = json.loads(body)
            pages.append(
                {
                    "nodes": len(data["results"]),
                    "seconds": round(elapsed, 3),
                    "queries": len(queries),
                    "bytes": len(body),
                }
            )
            url = data["next"]
        times = [p["seconds"] for p in pages]
        return {
            "page_size": page_size,
            "pages": pages,
            "total_s": round(sum(times), 2),
            "median_page_s": round(statistics.median(times), 3),
            "max_queries_per_page": max(p["queries"] for p in pages),
        }

    def _drain_csv(self, client: APIClient) -> tuple[int, int]:
        response = client.get("/api/v1/nodes/export.csv")
        assert response.status_code == 200
        size = lines = 0
        for chunk in response.streaming_content:
            size += len(chunk)
            lines += chunk.count(b"\n")
        return size, lines

    def bench_csv(self, client: APIClient) -> dict:
        started = time.perf_counter()
        size, lines = self._drain_csv(client)
        elapsed = time.perf_counter() - started
        tracemalloc.start()
        self._drain_csv(client)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return {
            "seconds": round(elapsed, 2),
            "rows": lines - 1,
            "bytes": size,
            "peak_traced_mib": round(peak / 2**20, 1),
        }

    def report(self, results: dict) -> None:
        w = self.stdout.write
        w(
            f"{results['nodes']} nodes x {results['components_per_node']} components on "
            f"{results['database']} (set-up {results.get('setup_s')} s)"
        )
        j = results.get("json")
        if j:
            w(f"JSON /api/v1/nodes/ page_size={j['page_size']}:")
            for i, page in enumerate(j["pages"], 1):
                w(
                    f"  page {i:3d}: {page['nodes']:5d} nodes {page['seconds']:7.3f} s "
                    f"{page['queries']:3d} queries {page['bytes'] / 2**20:6.1f} MiB"
                )
            w(
                f"  total {j['total_s']} s, median page {j['median_page_s']} s, "
                f"at most {j['max_queries_per_page']} queries per page"
            )
        c = results.get("csv")
        if c:
            w(
                f"CSV /api/v1/nodes/export.csv: {c['rows']} rows, {c['bytes'] / 2**20:.1f} MiB in "
                f"{c['seconds']} s; peak traced memory {c['peak_traced_mib']} MiB"
            )
