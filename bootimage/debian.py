"""What the build machine's own apt knows: its Debian mirror, its suite, its kernel package."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

APT_SOURCES = Path("/etc/apt")


class BuildError(Exception):
    """The image cannot be built on this machine (a missing tool, no mirror, a failed step)."""


@dataclass(frozen=True)
class DebianSource:
    mirror: str
    suite: str


def os_suite(os_release: Path = Path("/etc/os-release")) -> str:
    """The running Debian's codename (bookworm): the image is built from the same release."""
    for line in os_release.read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip().strip('"')
    raise BuildError(f"{os_release} names no VERSION_CODENAME")


def debian_source(apt_dir: Path = APT_SOURCES) -> DebianSource:
    """The machine's Debian mirror, read from its apt sources (deb822 or one-line form).

    The mirror is never written into the repository: each site builds from the mirror it trusts.
    """
    suite = os_suite()
    files = sorted((apt_dir / "sources.list.d").glob("*.sources"))
    for path in files:
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            fields = _deb822_fields(stanza)
            if (
                "deb" in fields.get("types", "").split()
                and suite in fields.get("suites", "").split()
            ):
                for uri in fields.get("uris", "").split():
                    if "security" not in uri:
                        return DebianSource(uri.rstrip("/"), suite)
    one_line = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]
    for path in one_line:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            words = re.sub(r"\[[^]]*\]", "", line).split()
            if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                return DebianSource(words[1].rstrip("/"), suite)
    raise BuildError(f"no Debian mirror for {suite} in {apt_dir}'s sources")


def _deb822_fields(stanza: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = None
    for line in stanza.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line[0].isspace() and key:
            fields[key] += " " + line.strip()
            continue
        key, _, value = line.partition(":")
        key = key.strip().lower()
        fields[key] = value.strip()
    return fields


def kernel_package(flavour: str = "amd64") -> tuple[str, str]:
    """The versioned kernel package the `linux-image-<flavour>` metapackage points at, and its version."""
    depends = _run(["apt-cache", "depends", f"linux-image-{flavour}"])
    match = re.search(r"Depends:\s*(linux-image-\S+)", depends)
    if not match:
        raise BuildError(f"apt knows no kernel behind linux-image-{flavour}; run apt-get update")
    name = match.group(1)
    policy = _run(["apt-cache", "policy", name])
    version = re.search(r"Candidate:\s*(\S+)", policy)
    if not version or version.group(1) == "(none)":
        raise BuildError(f"apt has no candidate version of {name}")
    return name, version.group(1)


def _run(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError as exc:
        raise BuildError(f"{argv[0]} is not installed") from exc
    except subprocess.CalledProcessError as exc:
        raise BuildError(f"{' '.join(argv)} failed: {exc.stderr.strip()}") from exc
