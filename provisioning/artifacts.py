"""Checking an artifact against the manifest's sha256 before a BMC is told to use it."""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import httpx

_verified: set[tuple[str, str]] = set()
_lock = threading.Lock()


class ArtifactMismatch(Exception):
    """The artifact at the URL is not the one the manifest names."""


def stream_checked(url: str, sha256: str, sink: BinaryIO | None = None) -> None:
    """Stream the artifact (into `sink`, if given) and raise unless its sha256 is the one named."""
    digest = hashlib.sha256()
    with httpx.Client(timeout=httpx.Timeout(60.0, connect=5.0)) as http:
        with http.stream("GET", url) as response:
            if response.status_code != 200:
                raise ArtifactMismatch(f"{url}: HTTP {response.status_code}")
            for chunk in response.iter_bytes():
                digest.update(chunk)
                if sink is not None:
                    sink.write(chunk)
    if digest.hexdigest() != sha256:
        raise ArtifactMismatch(f"{url}: sha256 is {digest.hexdigest()}, the manifest says {sha256}")


@contextmanager
def fetch_verified(url: str, sha256: str) -> Iterator[BinaryIO]:
    """The artifact as an open temporary file, for a BMC that only takes a pushed image.

    Streamed to disk while its digest is computed (BMC bundles run to gigabytes) and checked
    before use; the file is deleted when the block ends.
    """
    with tempfile.TemporaryFile(prefix="greenlight-artifact-") as image:
        stream_checked(url, sha256, image)
        image.seek(0)
        yield image


def verify_artifact(url: str, sha256: str) -> None:
    """Stream the artifact and compare its digest; remembered per process once it matched."""
    key = (url, sha256)
    with _lock:
        if key in _verified:
            return
    stream_checked(url, sha256)
    with _lock:
        _verified.add(key)
