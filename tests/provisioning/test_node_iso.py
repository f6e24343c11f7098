"""A BMC fetches the node's own ISO from Greenlight: built from the served base image, carrying
that node's credential, and only while the node's run lives."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest

from agent import boot_args
from provisioning.boot import path as boot_path
from provisioning.boot.credentials import ephemeral_credential, secret_of
from provisioning.boot.media import read_iso_file
from tests.factories import make_node
from tests.provisioning.test_boot_media import base_iso  # noqa: F401 - a real hybrid ISO
from tests.support.scenes import make_run

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def served_images(settings, tmp_path, base_iso):  # noqa: F811
    """A build output folder as `python -m bootimage build` leaves it, served by Greenlight."""
    images = tmp_path / "images"
    images.mkdir()
    data = base_iso.read_bytes()
    (images / "ephemeral.iso").write_bytes(data)
    sha256 = hashlib.sha256(data).hexdigest()
    files = {"ephemeral.iso": {"sha256": sha256, "size": len(data)}}
    (images / "manifest.json").write_text(json.dumps({"files": files}))
    settings.GREENLIGHT_BOOT_IMAGE_DIR = images
    settings.GREENLIGHT_BOOT_MEDIA_DIR = tmp_path / "media"
    return sha256


def test_a_node_iso_carries_its_own_credential(
    live_server, settings, served_images, rack, manifest
):
    settings.GREENLIGHT_BOOT_MEDIA_URL = live_server.url
    index = httpx.get(f"{live_server.url}/boot/v1/images/", timeout=10).json()
    assert index["images"][0]["sha256"] == served_images
    spec = manifest.spec | {
        "ephemeral": {
            "boot": "virtual_media",
            "iso": {
                "url": f"{live_server.url}/boot/v1/images/ephemeral.iso",
                "sha256": served_images,
            },
        }
    }
    manifest.spec = spec
    manifest.save(update_fields=["spec"])
    alpha, beta = make_node(rack=rack), make_node(rack=rack)
    credentials = {
        n.serial: ephemeral_credential(make_run(n, phases_done=2)) for n in (alpha, beta)
    }

    url = boot_path.media_url(credentials[alpha.serial])
    answer = httpx.get(url, timeout=60)
    assert answer.status_code == 200, answer.text
    iso = settings.GREENLIGHT_BOOT_MEDIA_DIR / "fetched.iso"
    iso.write_bytes(answer.content)
    grub = read_iso_file(iso, "/boot/grub/grub.cfg").decode()
    args = boot_args.parse(grub.split("console=ttyS0", 1)[1].splitlines()[0])
    assert args.credential == secret_of(credentials[alpha.serial])
    assert secret_of(credentials[beta.serial]) not in grub
    assert args.url == settings.GREENLIGHT_AGENT_URL

    assert httpx.get(f"{live_server.url}/boot/v1/media/guessed.iso", timeout=10).status_code == 404
    run = credentials[alpha.serial].run
    run.status = "aborted"
    run.save(update_fields=["status"])
    assert httpx.get(url, timeout=10).status_code == 404


def test_a_base_image_that_does_not_verify_is_refused(
    live_server, settings, served_images, rack, manifest
):
    manifest.spec = manifest.spec | {
        "ephemeral": {
            "boot": "virtual_media",
            "iso": {"url": f"{live_server.url}/boot/v1/images/ephemeral.iso", "sha256": "0" * 64},
        }
    }
    manifest.save(update_fields=["spec"])
    node = make_node(rack=rack)
    credential = ephemeral_credential(make_run(node, phases_done=2))
    settings.GREENLIGHT_BOOT_MEDIA_URL = live_server.url
    answer = httpx.get(boot_path.media_url(credential), timeout=30)
    assert answer.status_code == 409
    assert "sha256" in answer.text


def test_only_listed_images_are_served(live_server, served_images):
    assert (
        httpx.get(f"{live_server.url}/boot/v1/images/manifest.json", timeout=10).status_code == 404
    )
    assert (
        httpx.get(f"{live_server.url}/boot/v1/images/..%2Fsecret_key", timeout=10).status_code
        == 404
    )
