"""Fetching artifacts: streamed to disk, checked against the manifest's sha256 before any use."""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from pathlib import Path

import httpx


class DownloadError(Exception):
    """An artifact could not be fetched, or is not the one the manifest names."""


async def fetch_verified(
    http: httpx.AsyncClient,
    url: str,
    sha256: str,
    *,
    attempts: int = 4,
    directory: str | None = None,
) -> Path:
    """Download `url` and return its path; raise unless its sha256 is exactly `sha256`.

    A dropped connection is retried (a network blip mid-download is routine in a busy hall); a
    wrong digest is not: it means the wrong or a tampered artifact.
    """
    last: Exception | None = None
    for attempt in range(attempts):
        digest = hashlib.sha256()
        handle = tempfile.NamedTemporaryFile(delete=False, dir=directory, suffix=".img")
        try:
            with handle:
                async with http.stream("GET", url) as response:
                    if response.status_code != 200:
                        raise DownloadError(f"{url}: HTTP {response.status_code}")
                    async for chunk in response.aiter_bytes():
                        digest.update(chunk)
                        handle.write(chunk)
        except httpx.TransportError as exc:
            Path(handle.name).unlink(missing_ok=True)
            last = exc
            await asyncio.sleep(0.05 * (attempt + 1))
            continue
        if digest.hexdigest() != sha256:
            Path(handle.name).unlink(missing_ok=True)
            raise DownloadError(
                f"{url}: sha256 mismatch: manifest says {sha256}, got {digest.hexdigest()}"
            )
        return Path(handle.name)
    raise DownloadError(f"{url}: download failed after {attempts} attempts: {last}")
