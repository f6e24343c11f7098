"""The VM tier's documents: a second OS image is published as a manifest version of its own."""

from __future__ import annotations

import pytest
import yaml

from fleet.models import Manifest
from lab.vm.documents import publish_os_image, publish_vm_documents, vm_sku

pytestmark = pytest.mark.django_db

ISO = {"url": "https://127.0.0.1:8443/boot/v1/images/ephemeral.iso", "sha256": "a" * 64}
OS = {"url": "https://10.0.2.2:18443/boot/v1/images/os.img", "sha256": "b" * 64,
      "signature": "-----BEGIN PGP SIGNATURE-----"}  # fmt: skip
GOLDEN = {
    "bank": "sha256",
    "pcrs": [4, 9],
    "measurements": {"initramfs": {"digests": ["c" * 64], "count": 1}},
}


def test_a_new_os_image_is_a_new_version_that_keeps_the_golden_values_pinned_since():
    first = publish_vm_documents(iso=ISO, os_image=OS, profile="attestation")
    pinned = first.clone_as_draft(actor=None)
    pinned.yaml_text = pinned.yaml_text + yaml.safe_dump({"attestation": GOLDEN})
    pinned.full_clean()
    pinned.save()
    pinned.publish()

    other = {**OS, "url": OS["url"].replace("os.img", "os-tampered.img"), "sha256": "d" * 64}
    third = publish_os_image(other)
    assert Manifest.current_for(vm_sku()) == third
    assert third.version not in (first.version, pinned.version)
    assert third.spec["os_image"]["sha256"] == "d" * 64
    assert third.spec["os_image"]["url"].endswith("/os-tampered.img")
    assert third.spec["attestation"]["measurements"] == GOLDEN["measurements"]
    assert third.spec["ephemeral"] == pinned.spec["ephemeral"]
