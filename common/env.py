"""Typed readers for settings from the environment, strict: a bad value is named, never guessed.

A reader never raises and never reads a typo as its default without saying so: a value it cannot
take (not a boolean, not a number, out of bounds) is recorded as a problem naming the variable,
and the default stands in so that the settings still import and `manage.py check` can name every
problem at once (common/checks.py). Every name a reader is asked for is recorded too: a
GREENLIGHT_ variable that no reader asked for is a typo or a leftover, and the check names it.
"""

from __future__ import annotations

import math
import os
import secrets
from pathlib import Path

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})

# What this process's readers were asked for, and what they could not take: filled as the
# settings import, read by the system checks.
_names_read: set[str] = set()
_problems: dict[str, str] = {}


def names_read() -> frozenset[str]:
    """Every variable name a reader has been asked for in this process."""
    return frozenset(_names_read)


def problems() -> dict[str, str]:
    """Variable name -> what is wrong with its value, for every value a reader could not take."""
    return dict(_problems)


def _read(name: str) -> str | None:
    """The variable's text, or None when unset or blank; records that `name` was asked for."""
    _names_read.add(name)
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def _refuse(name: str, reason: str) -> None:
    _problems.setdefault(name, f"{name}: {reason}")


def _show(number: float) -> str:
    """A bound as an operator would write it: 1, 0.5, 31536000 (not 1.0 or 3.15e+07)."""
    return str(int(number)) if float(number).is_integer() else str(number)


def _within(
    name: str,
    text: str,
    number: float,
    minimum: float | None,
    maximum: float | None,
    above: float | None = None,
) -> bool:
    """True if `number` is in bounds; otherwise records which bound it breaks."""
    if minimum is not None and number < minimum:
        _refuse(name, f"{text} is below the minimum {_show(minimum)}")
    elif above is not None and number <= above:
        _refuse(name, f"{text} must be greater than {_show(above)}")
    elif maximum is not None and number > maximum:
        _refuse(name, f"{text} is above the maximum {_show(maximum)}")
    else:
        return True
    return False


def env_str(name: str, default: str = "") -> str:
    """Return the variable as a string, or the default when unset or empty."""
    _names_read.add(name)
    return os.environ.get(name) or default


def env_bool(name: str, default: bool = False) -> bool:
    """Return the variable read as a boolean: 1/true/yes/on or 0/false/no/off, any case."""
    text = _read(name)
    if text is None:
        return default
    if text.lower() in TRUE_WORDS:
        return True
    if text.lower() in FALSE_WORDS:
        return False
    _refuse(name, f"{text!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")
    return default


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return the variable as an int within [minimum, maximum]; anything else is a problem."""
    text = _read(name)
    if text is None:
        return default
    try:
        number = int(text)
    except ValueError:
        _refuse(name, f"{text!r} is not an integer")
        return default
    return number if _within(name, text, number, minimum, maximum) else default


def env_float(
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
) -> float:
    """Return the variable as a finite float in bounds (`above` is exclusive, the others not)."""
    text = _read(name)
    if text is None:
        return default
    try:
        number = float(text)
    except ValueError:
        _refuse(name, f"{text!r} is not a number")
        return default
    if not math.isfinite(number):
        _refuse(name, f"{text!r} is not a finite number")
        return default
    return number if _within(name, text, number, minimum, maximum, above) else default


def env_list(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated variable as a list of stripped, non-empty items."""
    _names_read.add(name)
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_addresses(name: str) -> list[tuple[str, int]]:
    """Return a comma-separated list of host:port as (host, port) pairs; a bad item is a
    problem and the list is then empty."""
    addresses = []
    for item in env_list(name, []):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            _refuse(name, f"{item!r} is not host:port")
            return []
        addresses.append((host.strip("[]"), int(port)))
    return addresses


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
