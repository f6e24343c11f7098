"""Small typed helpers for reading settings from the environment."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def env_str(name: str, default: str = "") -> str:
    """Return the variable as a string, or the default when unset or empty."""
    return os.environ.get(name) or default


def env_bool(name: str, default: bool = False) -> bool:
    """Return the variable read as a boolean (1/true/yes/on)."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    """Return the variable as an int; a malformed value is an error, not a silent default."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def env_float(name: str, default: float) -> float:
    """Return the variable as a float; a malformed value is an error."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated variable as a list of stripped, non-empty items."""
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def generated_secret(path: Path, nbytes: int = 48) -> str:
    """Read a secret from `path`, generating it (mode 0600) on first use.

    Keeps secrets out of the repository while letting a fresh checkout start with no set-up.
    """
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(nbytes)
    # O_EXCL: two processes starting at once must not write two different keys.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(value)
    return value


# What the web server (daphne) is started with by the demo and the lab: it pools its PostgreSQL
# connections (settings.DB_POOL_SIZE says why). An operator's own environment overrides it.
WEB_SERVER_ENV = {"GREENLIGHT_DB_POOL": "16"}
