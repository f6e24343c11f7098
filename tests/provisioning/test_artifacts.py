"""Artifacts are checked against the manifest's sha256 before a BMC is given them."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading

import pytest

from provisioning.artifacts import ArtifactMismatch, fetch_verified

BODY = b"bios bundle " * 50_000


@pytest.fixture
def artifact_url(tmp_path):
    (tmp_path / "bios.bin").write_bytes(BODY)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_pushed_image_is_streamed_to_a_file_checked_then_deleted(artifact_url):
    with fetch_verified(f"{artifact_url}/bios.bin", hashlib.sha256(BODY).hexdigest()) as image:
        assert image.read() == BODY
        name = image.name
    assert image.closed, f"the temporary file {name} is gone after the push"


def test_an_image_that_is_not_the_manifests_is_refused(artifact_url):
    with (
        pytest.raises(ArtifactMismatch, match="the manifest says 000"),
        fetch_verified(f"{artifact_url}/bios.bin", "0" * 64),
    ):
        pass
    with (
        pytest.raises(ArtifactMismatch, match="HTTP 404"),
        fetch_verified(f"{artifact_url}/missing.bin", "0" * 64),
    ):
        pass
