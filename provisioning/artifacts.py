"""Checking an artifact against the manifest's sha256 before a BMC is told to use it."""

from __future__ import annotations

import hashlib
import threading

import httpx

_verified: set[tuple[str, str]] = set()
_lock = threading.Lock()


class ArtifactMismatch(Exception):
    """The artifact at the URL is not the one the manifest names."""


def fetch_verified(url: str, sha256: str) -> bytes:
    """The artifact's bytes, for a BMC that only takes a pushed image; checked before use."""
    with httpx.Client(timeout=httpx.Timeout(60.0, connect=5.0)) as http:
        response = http.get(url)
    if response.status_code != 200:
        raise ArtifactMismatch(f"{url}: HTTP {response.status_code}")
    digest = hashlib.sha256(response.content).hexdigest()
    if digest != sha256:
        raise ArtifactMismatch(f"{url}: sha256 is {digest}, the manifest says {sha256}")
    return response.content


def verify_artifact(url: str, sha256: str) -> None:
    """Stream the artifact and compare its digest; remembered per process once it matched."""
    key = (url, sha256)
    with _lock:
        if key in _verified:
            return
    digest = hashlib.sha256()
    with httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0)) as http:
        with http.stream("GET", url) as response:
            if response.status_code != 200:
                raise ArtifactMismatch(f"{url}: HTTP {response.status_code}")
            for chunk in response.iter_bytes():
                digest.update(chunk)
    if digest.hexdigest() != sha256:
        raise ArtifactMismatch(f"{url}: sha256 is {digest.hexdigest()}, the manifest says {sha256}")
    with _lock:
        _verified.add(key)
