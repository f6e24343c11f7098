"""Each node's own boot ISO: the manifest's ephemeral ISO with the node's credential in it.

The base ISO is fetched once per sha256 and checked against the manifest; a node's ISO is made
from it when its BMC first asks (so the web process that answers needs no shared disk with the
workers) and kept while the node's run lives.
"""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from ..artifacts import ArtifactMismatch, stream_checked
from ..models import BootCredential
from .credentials import kernel_args, live_media_keys
from .media import BootMediaError, build_node_iso

# Node ISOs of runs that ended are removed once they are this old.
STALE_AFTER = timedelta(hours=6)


class MediumUnavailable(Exception):
    """The node's ISO cannot be made: the manifest names no ISO, or it does not verify."""


def media_dir() -> Path:
    path = Path(settings.GREENLIGHT_BOOT_MEDIA_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def base_iso(manifest: dict) -> Path:
    """The manifest's ephemeral ISO on local disk, verified against its sha256."""
    iso = (manifest.get("ephemeral") or {}).get("iso")
    if not iso:
        raise MediumUnavailable("the manifest names no ephemeral ISO")
    path = media_dir() / f"base-{iso['sha256']}.iso"
    if path.exists():
        return path
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".base-", delete=False) as sink:
        try:
            stream_checked(iso["url"], iso["sha256"], sink)
        except (ArtifactMismatch, OSError) as exc:
            Path(sink.name).unlink(missing_ok=True)
            raise MediumUnavailable(str(exc)) from None
    os.replace(sink.name, path)
    return path


def node_iso(credential: BootCredential) -> Path:
    """The node's ISO for this credential, made on first use."""
    out = media_dir() / f"node-{credential.media_key}.iso"
    if out.exists():
        return out
    prune()
    try:
        return build_node_iso(base_iso(credential.run.manifest.spec), kernel_args(credential), out)
    except BootMediaError as exc:
        raise MediumUnavailable(str(exc)) from None


def prune() -> int:
    """Remove node ISOs whose credential is no longer live; the count removed."""
    live = live_media_keys()
    cutoff = (timezone.now() - STALE_AFTER).timestamp()
    removed = 0
    for path in media_dir().glob("node-*.iso"):
        key = path.name.removeprefix("node-").removesuffix(".iso")
        if key not in live and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            removed += 1
    return removed
