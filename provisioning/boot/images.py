"""Greenlight's own artifact server for the boot images `python -m bootimage` built.

Only the files its manifest.json lists are served, each with the sha256 the build recorded, so
a site's manifest can name `GREENLIGHT_BOOT_MEDIA_URL/boot/v1/images/ephemeral.iso` and its sha256
straight from `/boot/v1/images/`.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

MANIFEST = "manifest.json"


class NoSuchImage(Exception):
    """No built image of that name (or no build at all)."""


def _manifest() -> dict:
    path = Path(settings.GREENLIGHT_BOOT_IMAGE_DIR) / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise NoSuchImage(f"no boot image has been built into {path.parent}") from None
    except (OSError, ValueError) as exc:
        raise NoSuchImage(f"{path} is unreadable: {exc}") from None


def index() -> list[dict]:
    """Each built file: name, sha256, size."""
    try:
        files = _manifest().get("files") or {}
    except NoSuchImage:
        return []
    return [{"name": name, **entry} for name, entry in sorted(files.items())]


def image_file(name: str) -> tuple[Path, str]:
    """The path and recorded sha256 of a built file, only if the build's manifest lists it."""
    entry = (_manifest().get("files") or {}).get(name)
    if not isinstance(entry, dict) or "/" in name or name.startswith("."):
        raise NoSuchImage(f"no boot image called {name!r}")
    path = Path(settings.GREENLIGHT_BOOT_IMAGE_DIR) / name
    if not path.is_file():
        raise NoSuchImage(f"{name} is listed but missing from {path.parent}")
    return path, str(entry["sha256"])
