"""Each endpoint's shape: brief relations, {value, label} choices, nested parts, no secrets."""

from __future__ import annotations

import json

import pytest

from acceptance.models import AcceptanceProfile
from fleet.models import Manifest, Rack, Site
from tests import factories

from .conftest import BMC_PASSWORD, BMC_USERNAME, client_for

DETAIL_LISTS = [
    "/api/v1/sites/",
    "/api/v1/racks/",
    "/api/v1/skus/",
    "/api/v1/nodes/",
    "/api/v1/manifests/",
    "/api/v1/acceptance-profiles/",
    "/api/v1/runs/",
    "/api/v1/gate-results/",
    "/api/v1/decisions/",
    "/api/v1/wipe-requests/",
    "/api/v1/wipe-certificates/",
    "/api/v1/events/",
]


def _get(client, url, **params):
    response = client.get(url, params)
    assert response.status_code == 200, (url, response.content[:300])
    return response.json()


def test_every_list_and_detail_answers_and_shows_no_bmc_credentials(fleet, dora):
    client = client_for(dora)
    texts = []
    for url in DETAIL_LISTS:
        page = _get(client, url)
        assert page["results"], url
        texts.append(json.dumps(page))
        for item in page["results"]:
            texts.append(json.dumps(_get(client, f"{url}{item['id']}/")))
    response = client.get("/api/v1/nodes/export.csv")
    texts.append(b"".join(response.streaming_content).decode())
    texts.append(client.get("/api/schema/").content.decode())
    everything = "\n".join(texts)
    assert BMC_PASSWORD not in everything
    assert BMC_USERNAME not in everything
    assert "bmc_password" not in everything
    assert "bmc_username" not in everything


def test_node_detail_nests_components_and_brief_relations(fleet, dora):
    node = fleet["nodes"]["SN-BAD"]
    data = _get(client_for(dora), f"/api/v1/nodes/{node.pk}/")
    assert data["serial"] == "SN-BAD"
    assert data["state"] == {"value": "quarantined", "label": "Quarantined"}
    assert data["last_verdict"] == {"value": "fail", "label": "Fail"}
    assert data["rack"]["name"] == "R01" and set(data["rack"]) == {"id", "url", "display", "name"}
    assert data["site"]["name"] == "hall-1"
    assert data["sku"]["name"] == "hgx-h100-8gpu"
    assert data["manifest"]["version"] == "1.0.0"
    gpu = next(c for c in data["components"] if c["slot"] == "GPU 0")
    assert gpu == {
        "kind": {"value": "gpu", "label": "GPU"},
        "slot": "GPU 0",
        "model": "H100-SXM5-80GB",
        "serial": "SN-BAD-GPU0",
        "part_number": "PN-gpu",
        "firmware_version": "96.00.99.00.01",
        "updateable": False,
        "observed_at": gpu["observed_at"],
    }


def test_node_list_costs_a_fixed_number_of_queries(fleet, dora, django_assert_max_num_queries):
    client = client_for(dora)
    for i in range(10):
        factories.make_node(f"SN-EXTRA-{i}", rack=fleet["racks"][1], position=10 + i)
    client.get("/api/v1/nodes/")  # warm the permission cache
    # token, user, permissions (2), nodes, components: the same for 4 nodes or 14.
    with django_assert_max_num_queries(6):
        page = _get(client, "/api/v1/nodes/", page_size=100)
    assert len(page["results"]) == 14


def test_run_shows_its_phases_in_order(fleet, bob):
    run = fleet["runs"]["SN-BAD"]
    data = _get(client_for(bob), f"/api/v1/runs/{run.pk}/")
    assert data["status"] == {"value": "failed", "label": "Failed"}
    assert data["node"]["serial"] == "SN-BAD"
    assert [p["phase"] for p in data["phases"]] == ["preflight", "bmc_firmware"]
    assert data["phases"][0]["duration_s"] == 42.0
    assert data["phases"][1]["attempts"] == 2


def test_gate_result_raw_output_only_on_detail(fleet, dora):
    client = client_for(dora)
    page = _get(client, "/api/v1/gate-results/", verdict="fail")
    (result,) = page["results"]
    assert "raw_output" not in result
    assert result["findings"][0]["part"] == "GPU 3"
    detail = _get(client, f"/api/v1/gate-results/{result['id']}/")
    assert detail["raw_output"] == {"dcgm": "GPU 3: XID 79 ..."}


def test_decisions_wipes_and_certificates(fleet, dora):
    client = client_for(dora)
    decisions = _get(client, "/api/v1/decisions/", kind="quarantine")["results"]
    assert [(d["node"]["serial"], d["reason"], d["actor"]["username"]) for d in decisions] == [
        ("SN-BAD", "XID 79", "bob")
    ]
    (wipe,) = _get(client, "/api/v1/wipe-requests/")["results"]
    assert wipe["tenant"] == "acme" and [n["serial"] for n in wipe["nodes"]] == ["SN-SERVED"]
    assert len(wipe["certificates"]) == 1
    (cert,) = _get(client, "/api/v1/wipe-certificates/")["results"]
    assert cert["result"]["value"] == "passed"
    assert cert["drives"][0]["serial"] == "SN-SERVED-NVMe0"


def test_events_show_author_and_kind(fleet, dora):
    events = _get(client_for(dora), "/api/v1/events/", kind="phase_failed")["results"]
    assert [(e["node"]["serial"], e["actor"], e["data"]) for e in events] == [
        ("SN-BAD", "engine", {"error_kind": "bmc_auth"})
    ]


def test_admin_creates_site_and_rack(db, alice):
    client = client_for(alice)
    site = client.post("/api/v1/sites/", {"name": "hall-9"}, format="json")
    assert site.status_code == 201
    rack = client.post(
        "/api/v1/racks/", {"site": site.json()["id"], "name": "R1", "height_u": 48}, format="json"
    )
    assert rack.status_code == 201, rack.content
    assert rack.json()["site"]["name"] == "hall-9"
    assert Rack.objects.get(name="R1").site == Site.objects.get(name="hall-9")
    again = client.post("/api/v1/racks/", {"site": site.json()["id"], "name": "R1"}, format="json")
    assert again.status_code == 400 and "name" in again.json()
    bad = client.post("/api/v1/racks/", {"site": 999999, "name": "R2"}, format="json")
    assert bad.status_code == 400 and "site" in bad.json()


class TestDocuments:
    """Manifests and profiles: drafts are edited and published; published ones are frozen."""

    @pytest.mark.parametrize(
        ("url", "model", "sample"),
        [
            ("/api/v1/manifests/", Manifest, factories.sample_manifest_yaml),
            ("/api/v1/acceptance-profiles/", AcceptanceProfile, factories.sample_profile_yaml),
        ],
    )
    def test_create_edit_publish_then_immutable(self, db, alice, url, model, sample):
        factories.make_sku()
        client = client_for(alice)
        created = client.post(url, {"yaml_text": sample()}, format="json")
        assert created.status_code == 201, created.content
        data = created.json()
        assert data["status"]["value"] == "draft"
        assert data["version"] == "1.0.0" and data["sku"]["name"] == "hgx-h100-8gpu"
        assert data["created_by"]["username"] == "alice"
        doc_url = f"{url}{data['id']}/"

        edited_yaml = sample().replace('version: "1.0.0"', 'version: "1.0.1"')
        edited = client.patch(doc_url, {"yaml_text": edited_yaml}, format="json")
        assert edited.status_code == 200, edited.content
        assert edited.json()["version"] == "1.0.1"

        published = client.post(f"{doc_url}publish/")
        assert published.status_code == 200
        assert published.json()["status"]["value"] == "published"
        assert model.objects.get(pk=data["id"]).status == "published"

        frozen = client.patch(doc_url, {"yaml_text": sample()}, format="json")
        assert frozen.status_code == 400
        assert "yaml_text" in frozen.json()
        assert model.objects.get(pk=data["id"]).version == "1.0.1"
        again = client.post(f"{doc_url}publish/")
        assert again.status_code == 400

    def test_invalid_yaml_is_refused_with_the_field(self, db, alice):
        factories.make_sku()
        response = client_for(alice).post(
            "/api/v1/manifests/", {"yaml_text": "sku: nope\nversion: 1"}, format="json"
        )
        assert response.status_code == 400
        assert "yaml_text" in response.json()
        assert not Manifest.objects.exists()

    def test_duplicate_version_is_refused(self, db, alice, manifest):
        response = client_for(alice).post(
            "/api/v1/manifests/", {"yaml_text": factories.sample_manifest_yaml()}, format="json"
        )
        assert response.status_code == 400
        assert "already exists" in json.dumps(response.json())

    def test_status_and_spec_are_not_writable(self, db, alice, manifest):
        draft = manifest.clone_as_draft()
        response = client_for(alice).patch(
            f"/api/v1/manifests/{draft.pk}/",
            {"status": "published", "spec": {"x": 1}, "version": "9.9.9"},
            format="json",
        )
        assert response.status_code == 200
        draft.refresh_from_db()
        assert draft.status == "draft" and draft.version != "9.9.9" and "x" not in draft.spec


def test_yaml_with_control_characters_is_a_400_not_a_500(db, alice):
    # Found by the schema fuzzer: PyYAML's reader refuses these before parsing starts.
    factories.make_sku()
    response = client_for(alice).post("/api/v1/manifests/", {"yaml_text": "\x03"}, format="json")
    assert response.status_code == 400
    assert "malformed YAML" in json.dumps(response.json())
