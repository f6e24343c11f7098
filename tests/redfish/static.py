"""sushy-static (sushy-tools' read-only mockup server) serving a capture on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

import httpx

from lab.processes import free_port

STATIC_BIN = Path(sys.executable).parent / "sushy-static"
CAPTURES = Path(__file__).resolve().parent / "captures"
PREFIX = "/redfish/v1"


def captures() -> list[str]:
    """The capture folders kept in the repository."""
    return sorted(p.name for p in CAPTURES.iterdir() if (p / "index.json").is_file())


def linked_paths(folder: Path) -> set[str]:
    """Every /redfish/v1 path the capture's bodies link to (as spelled in the links)."""
    found: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, dict):
            link = value.get("@odata.id")
            if isinstance(link, str) and link.startswith(PREFIX):
                found.add(link.split("#", 1)[0].split("?", 1)[0].rstrip("/"))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for file in folder.rglob("index.json"):
        walk(json.loads(file.read_text()))
    return found


def served_tree(folder: Path, into: Path) -> Path:
    """A tree sushy-static can serve for the capture: each folder linked at its own spelling and
    at every other spelling the capture's links use for it.

    sushy-static matches paths exactly (and does not percent-decode them); HPE iLO links in lower
    case to folders the capture names in mixed case, as a real iLO matches paths in any case.
    """
    by_key: dict[str, Path] = {}
    for file in folder.rglob("index.json"):
        relative = file.parent.relative_to(folder).as_posix()
        by_key.setdefault(unquote(relative).lower().strip("./"), file.parent)
    spellings = {p.parent.relative_to(folder).as_posix() for p in folder.rglob("index.json")} | {
        link[len(PREFIX) :].strip("/") for link in linked_paths(folder)
    }
    for spelling in spellings:
        source = by_key.get(unquote(spelling).lower().strip("./"))
        if source is None:
            continue
        target = into / spelling if spelling not in ("", ".") else into
        target.mkdir(parents=True, exist_ok=True)
        if not (target / "index.json").exists():
            (target / "index.json").symlink_to(source / "index.json")
    return into


@contextmanager
def sushy_static(folder: Path, workdir: Path) -> Iterator[str]:
    """Run sushy-static on 127.0.0.1 for a capture; yield its base URL."""
    tree = served_tree(folder, workdir / "tree")
    port = free_port()
    log = open(workdir / "sushy-static.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(STATIC_BIN), "-i", "127.0.0.1", "-p", str(port), "-m", str(tree)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError((workdir / "sushy-static.log").read_text()[-2000:])
            try:
                httpx.get(url + "/redfish/v1/", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise RuntimeError("sushy-static did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
