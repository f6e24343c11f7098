"""The sample 8-GPU HGX SKU with its manifest and acceptance profile, and a demo site and rack.

The YAML sources are acceptance/samples/*.yaml; acceptance/fixtures/sample_hgx.json holds the same rows for
`loaddata` (a test keeps the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from fleet.choices import DocumentStatus
from fleet.models import Manifest, Rack, Site, Sku, VersionedDocument

from .models import AcceptanceProfile

SAMPLES_DIR = Path(__file__).resolve().parent / "samples"
MANIFEST_YAML = SAMPLES_DIR / "hgx-h100-8gpu.manifest.yaml"
PROFILE_YAML = SAMPLES_DIR / "hgx-h100-8gpu.profile.yaml"

SKU_NAME = "hgx-h100-8gpu"
SKU_FIELDS = {
    "description": "HGX H100 8-GPU, 8x400G fabric, 2 DPUs, 8 NVMe",
    "gpu_count": 8,
    "gpu_model": "H100-SXM5-80GB",
    "nic_count": 8,
    "nic_line_rate_gbps": 400,
    "dpu_count": 2,
    "drive_count": 8,
    "nvlink_bandwidth_gbps": 450,
}
DEMO_SITE = "hall-1"
DEMO_RACK = "R01"


@dataclass
class LoadReport:
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)


def _document(model: type[VersionedDocument], path: Path, report: LoadReport) -> None:
    """Create and publish the sample version unless it is there already."""
    doc = model(yaml_text=path.read_text())
    parsed = model.parse_yaml(doc.yaml_text)
    label = f"{model._meta.verbose_name} {parsed.sku} {parsed.version}"
    if model.objects.filter(sku__name=parsed.sku, version=parsed.version).exists():
        report.existing.append(label)
        return
    doc.full_clean()
    doc.save()
    # Never retire a version someone published after the sample.
    if not model.objects.filter(sku=doc.sku, status=DocumentStatus.PUBLISHED).exists():
        doc.publish()
    report.created.append(label)


def load_samples() -> LoadReport:
    """Create what is missing of the samples; leave everything that exists as it is."""
    report = LoadReport()
    with transaction.atomic():
        _, created = Sku.objects.get_or_create(name=SKU_NAME, defaults=SKU_FIELDS)
        (report.created if created else report.existing).append(f"SKU {SKU_NAME}")
        _document(Manifest, MANIFEST_YAML, report)
        _document(AcceptanceProfile, PROFILE_YAML, report)
        site, created = Site.objects.get_or_create(
            name=DEMO_SITE, defaults={"description": "Demo hall"}
        )
        (report.created if created else report.existing).append(f"site {DEMO_SITE}")
        _, created = Rack.objects.get_or_create(site=site, name=DEMO_RACK)
        (report.created if created else report.existing).append(f"rack {DEMO_SITE}/{DEMO_RACK}")
    return report
