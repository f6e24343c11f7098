"""What the boot medium tells the agent: `greenlight.*` words of the kernel command line."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

PREFIX = "greenlight."
DEFAULT_CA = Path("/etc/greenlight/ca.pem")


@dataclass(frozen=True)
class BootArgs:
    url: str = ""
    credential: str = ""
    environment: str = "ephemeral"
    ca_file: str = ""


def parse(cmdline: str) -> BootArgs:
    """The greenlight.url, .credential, .environment and .ca words of a kernel command line."""
    words = {}
    for word in shlex.split(cmdline):
        key, sep, value = word.partition("=")
        if sep and key.startswith(PREFIX):
            words[key.removeprefix(PREFIX)] = value
    return BootArgs(
        url=words.get("url", ""),
        credential=words.get("credential", ""),
        environment=words.get("environment", "ephemeral"),
        ca_file=words.get("ca", str(DEFAULT_CA) if DEFAULT_CA.exists() else ""),
    )


def read(path: Path = Path("/proc/cmdline")) -> BootArgs:
    """The boot arguments of the running kernel (empty where the file is missing)."""
    return parse(path.read_text()) if path.exists() else BootArgs()
