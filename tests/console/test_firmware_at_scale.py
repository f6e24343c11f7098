"""The fleet firmware view at 5,000 nodes (issue 36): the page, the API and the CSV answer in the
same queries as at 50 nodes (pinned in tests/query_counts.json), and their rows are the stored
inventory's, row for row, as this test counts them itself from the components, the nodes, their
runs and the manifests' firmware targets.

The fleet is lab.synthetic_fleet's: two SKUs, a retired and a published manifest (a per-model
NVMe target in one), nodes in every state (on their own manifest, on their first run's, on none),
parts of eight kinds running several versions per model.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict

import pytest
from django.urls import reverse

from fleet.choices import NodeState
from fleet.models import Component, Manifest, Node
from lab.synthetic_fleet import build_fleet
from provisioning.models import Run
from tests.api.conftest import client_for
from tests.support.query_counts import assert_pinned, count_queries

SMALL, LARGE = 50, 5000
PAGES = {
    "scale:console:firmware": ("bob", "console:firmware"),
    "scale:api:firmware-list": ("dora", "api:firmware-list"),
    "scale:api:firmware-export-csv": ("dora", "api:firmware-export-csv"),
}


def wanted(spec: dict, kind: str, model: str) -> str:
    """The manifest's target for the part: a per-model one whose model the part's contains,
    else the kind's; none for kinds the manifest does not target (GPU, CPU)."""
    block = spec.get("firmware", {}).get(kind)
    if not block:
        return ""
    for name, target in (block.get("models") or {}).items():
        if name.lower() in model.lower():
            return target["version"]
    return block["version"]


def expected_rows() -> set[tuple]:
    """The rows, counted here from the stored rows: every part of every node still in the fleet,
    keyed by kind, model, version, SKU and the manifest the node is on (its own, else its latest
    run's, else none)."""
    latest_run: dict[int, int] = {}
    for node_id, manifest_id in Run.objects.order_by("node_id", "created_at", "pk").values_list(
        "node_id", "manifest_id"
    ):
        latest_run[node_id] = manifest_id  # the last one written wins: the latest
    nodes = {
        pk: (serial, sku, manifest_id or latest_run.get(pk))
        for pk, serial, sku, manifest_id in Node.objects.exclude(
            state=NodeState.DECOMMISSIONED
        ).values_list("pk", "serial", "sku__name", "manifest_id")
    }
    manifests = {m.pk: m for m in Manifest.objects.all()}
    parts: dict[tuple, int] = defaultdict(int)
    serials: dict[tuple, set[str]] = defaultdict(set)
    for node_id, kind, model, version in Component.objects.values_list(
        "node_id", "kind", "model", "firmware_version"
    ):
        if node_id not in nodes:
            continue
        serial, sku, manifest_id = nodes[node_id]
        key = (kind, model, version, sku, manifest_id)
        parts[key] += 1
        serials[key].add(serial)
    rows = set()
    for key, count in parts.items():
        kind, model, version, sku, manifest_id = key
        manifest = manifests.get(manifest_id)
        want = wanted(manifest.spec, kind, model) if manifest else ""
        behind = sorted(serials[key]) if want and want != version else []
        on = manifest.version if manifest else ""
        rows.add(
            (kind, model, version, sku, on, want, count, len(serials[key]), len(behind))
            + tuple(behind)
        )
    return rows


def as_row(r: dict) -> tuple:
    return (
        r["kind"],
        r["model"],
        r["version"],
        r["sku"],
        r["manifest_version"],
        r["wanted"],
        r["parts"],
        r["nodes"],
        r["nodes_behind"],
    ) + tuple(r["behind_serials"])


def csv_row(line: list[str]) -> tuple:
    kind, model, version, sku, on, want, parts, nodes, behind, serials = line
    return (kind, model, version, sku, on, want, int(parts), int(nodes), int(behind)) + tuple(
        serials.split()
    )


def measure(clients: dict) -> dict[str, int]:
    counts = {}
    for name, (who, url_name) in PAGES.items():
        counts[name] = count_queries(lambda who=who, url_name=url_name: _ok(clients[who], url_name))
    return counts


def _ok(client, url_name: str):
    response = client.get(reverse(url_name))
    assert response.status_code == 200
    return response


@pytest.mark.django_db
def test_firmware_view_is_the_stored_inventory_in_bounded_queries_at_5000_nodes(client, bob, dora):
    build_fleet(SMALL, parts_per_kind=2)
    client.force_login(bob)
    clients = {"bob": client, "dora": client_for(dora)}
    client.get(reverse("console:firmware"))  # warm the session and permission caches alike
    small = measure(clients)

    build_fleet(LARGE - SMALL, first=SMALL, parts_per_kind=2)
    large = measure(clients)
    assert small == large, "the firmware view's query count grows with the fleet"
    assert_pinned(large)

    expected = expected_rows()
    assert sum(row[6] for row in expected) > 60_000  # every part of 4,750 nodes is counted
    behind = {serial for row in expected for serial in row[9:]}
    assert 1000 < len(behind) < Node.objects.count()  # many nodes behind, not all

    page = client.get(reverse("console:firmware"))
    assert {as_row(r.as_dict()) for m in page.context["models"] for r in m.rows} == expected
    assert page.context["nodes_behind"] == len(behind)
    api = clients["dora"].get(reverse("api:firmware-list")).json()
    assert len(api) == len(expected) and {as_row(r) for r in api} == expected
    export = clients["dora"].get(reverse("api:firmware-export-csv"))
    lines = list(csv.reader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert len(lines) - 1 == len(expected) and {csv_row(line) for line in lines[1:]} == expected
