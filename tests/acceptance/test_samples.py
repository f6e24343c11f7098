"""The sample HGX SKU, manifest and profile: the command is idempotent, the fixture never drifts."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from acceptance.models import AcceptanceProfile
from acceptance.profiles import parse_profile
from acceptance.sample_data import MANIFEST_YAML, PROFILE_YAML
from fleet.choices import DocumentStatus
from fleet.manifests import parse_manifest
from fleet.models import Manifest, Rack, Site, Sku

FIXTURE = Path(__file__).resolve().parents[2] / "acceptance" / "fixtures" / "sample_hgx.json"
PARSERS = {"fleet.manifest": parse_manifest, "acceptance.acceptanceprofile": parse_profile}
SOURCES = {"fleet.manifest": MANIFEST_YAML, "acceptance.acceptanceprofile": PROFILE_YAML}


def _fixture_rows() -> list[dict]:
    return json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("model", sorted(PARSERS))
def test_the_fixture_spec_is_the_parse_of_its_yaml(model):
    (row,) = [r for r in _fixture_rows() if r["model"] == model]
    parsed = PARSERS[model](row["fields"]["yaml_text"])
    assert row["fields"]["spec"] == parsed.spec
    assert row["fields"]["version"] == parsed.version


@pytest.mark.parametrize("model", sorted(SOURCES))
def test_the_fixture_yaml_is_the_sample_file(model):
    (row,) = [r for r in _fixture_rows() if r["model"] == model]
    assert row["fields"]["yaml_text"] == SOURCES[model].read_text()


@pytest.mark.django_db
def test_the_fixture_loads():
    call_command("loaddata", "sample_hgx", verbosity=0)
    sku = Sku.objects.get(name="hgx-h100-8gpu")
    assert Manifest.current_for(sku).spec == parse_manifest(MANIFEST_YAML.read_text()).spec
    assert AcceptanceProfile.current_for(sku).version == "1.0.0"


@pytest.mark.django_db
def test_load_samples_creates_the_sku_documents_and_demo_rack():
    out = io.StringIO()
    call_command("load_samples", stdout=out)
    sku = Sku.objects.get(name="hgx-h100-8gpu")
    assert (sku.gpu_count, sku.gpu_model, sku.nic_count, sku.nic_line_rate_gbps) == (
        8,
        "H100-SXM5-80GB",
        8,
        400,
    )
    assert (sku.dpu_count, sku.drive_count, sku.nvlink_bandwidth_gbps) == (2, 8, 450)
    manifest = Manifest.current_for(sku)
    assert manifest.status == DocumentStatus.PUBLISHED and manifest.version == "1.0.0"
    assert AcceptanceProfile.current_for(sku).status == DocumentStatus.PUBLISHED
    assert Rack.objects.get(site__name="hall-1", name="R01").height_u == 42
    assert "created SKU hgx-h100-8gpu" in out.getvalue()


@pytest.mark.django_db
def test_load_samples_twice_changes_nothing():
    call_command("load_samples", stdout=io.StringIO())
    counts = [m.objects.count() for m in (Sku, Manifest, AcceptanceProfile, Site, Rack)]
    out = io.StringIO()
    call_command("load_samples", stdout=out)
    assert [m.objects.count() for m in (Sku, Manifest, AcceptanceProfile, Site, Rack)] == counts
    assert "created" not in out.getvalue()


@pytest.mark.django_db
def test_load_samples_never_retires_a_newer_published_version():
    call_command("load_samples", stdout=io.StringIO())
    sku = Sku.objects.get()
    Manifest.current_for(sku).clone_as_draft().publish()
    call_command("load_samples", stdout=io.StringIO())
    assert Manifest.current_for(sku).version == "1.0.1"
