"""The agent's flash command on a node with drives of two makers, each taking its own artifact.

SystemHardware reads the drives from recorded nvme-cli output (a WDC SN730 twice, a Solidigm
D5-P5336) and its flasher's commands go through the `run` seam, which records them and reads the
image each was given; the artifacts come from a real HTTP server on loopback.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from agent import protocol
from agent.commands import CommandFailed, flash_firmware
from agent.hardware import SystemHardware

from .recorded import RecordedTools, two_maker_node

WDC, SOLIDIGM = b"wdc SN730 firmware 11170200", b"solidigm D5-P5336 firmware 7CV10200"


class Artifacts:
    """A real HTTP server over a folder; it counts the GETs of each path."""

    def __init__(self, folder: Path) -> None:
        self.gets: dict[str, int] = {}
        counts = self.gets

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                counts[self.path] = counts.get(self.path, 0) + 1
                super().do_GET()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=folder))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def artifacts(tmp_path) -> Iterator[Artifacts]:
    folder = tmp_path / "artifacts"
    folder.mkdir()
    (folder / "wdc.bin").write_bytes(WDC)
    (folder / "solidigm.bin").write_bytes(SOLIDIGM)
    served = Artifacts(folder)
    yield served
    served.server.shutdown()
    served.server.server_close()


class Flasher:
    """The `run` seam: records each command and the image bytes an fw-download was given."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []
        self.images: dict[str, bytes] = {}

    async def run(self, cmd, log=None, timeout=None):
        self.commands.append(cmd)
        if cmd[:2] == ["nvme", "fw-download"]:
            self.images[cmd[2]] = Path(cmd[4]).read_bytes()
        return 0, "Firmware download success"


def node(tmp_path) -> tuple[SystemHardware, Flasher]:
    tools = RecordedTools(two_maker_node())
    (tmp_path / "sys" / "block").mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    flasher = Flasher()
    hw = SystemHardware(
        capture=tools.capture,
        run=flasher.run,
        sys_root=tmp_path / "sys",
        dev_root=tmp_path / "dev",
    )
    return hw, flasher


def target(served: Artifacts, model: str | None, version: str, name: str, body: bytes) -> dict:
    return {
        "model": model,
        "version": version,
        "url": f"{served.url}/{name}",
        "sha256": hashlib.sha256(body).hexdigest(),
    }


def flash(hw: SystemHardware, targets: list[dict]) -> tuple[dict, list[str]]:
    lines: list[str] = []

    async def go() -> dict:
        async with httpx.AsyncClient() as http:
            params = {"component": "nvme", "targets": targets}
            return await flash_firmware(hw, http, params, lines.append)

    return asyncio.run(go()), lines


def test_each_drive_takes_its_own_models_artifact_fetched_once(tmp_path, artifacts):
    hw, flasher = node(tmp_path)
    targets = [
        target(artifacts, "SBFPF2BU153T", "7CV10200", "solidigm.bin", SOLIDIGM),
        target(artifacts, "SN730", "11170200", "wdc.bin", WDC),
    ]
    result, _ = flash(hw, targets)
    assert flasher.images == {"/dev/nvme0": WDC, "/dev/nvme1": SOLIDIGM, "/dev/nvme2": WDC}
    assert [(f["device"], f["from"], f["to"]) for f in result["flashed"]] == [
        ("/dev/nvme0n1", "11170101", "11170200"),
        ("/dev/nvme1n1", "6CV10100", "7CV10200"),
        ("/dev/nvme2n1", "11170101", "11170200"),
    ]
    assert artifacts.gets == {"/solidigm.bin": 1, "/wdc.bin": 1}
    assert result["needs_reset"] is True


def test_a_drive_no_target_covers_and_one_at_its_version_are_left_alone(tmp_path, artifacts):
    hw, flasher = node(tmp_path)
    targets = [target(artifacts, "SBFPF2BU153T", "6CV10100", "solidigm.bin", SOLIDIGM)]
    result, lines = flash(hw, targets)
    assert result["flashed"] == [] and flasher.commands == [] and artifacts.gets == {}
    assert lines == ["every nvme already runs its target version"]


def test_a_target_without_a_model_covers_every_drive_the_models_do_not(tmp_path, artifacts):
    hw, flasher = node(tmp_path)
    targets = [
        target(artifacts, "SBFPF2BU153T", "7CV10200", "solidigm.bin", SOLIDIGM),
        target(artifacts, None, "11170200", "wdc.bin", WDC),
    ]
    flash(hw, targets)
    assert flasher.images == {"/dev/nvme0": WDC, "/dev/nvme1": SOLIDIGM, "/dev/nvme2": WDC}


def test_targets_that_are_not_a_list_of_artifacts_are_refused_by_name(tmp_path, artifacts):
    hw, flasher = node(tmp_path)
    for bad in (None, "GDC7302Q", [{"model": "SN730", "version": "1"}]):
        with pytest.raises(CommandFailed, match="targets must be a list of"):
            flash(hw, bad)
    assert flasher.commands == []


def test_the_model_rule_is_a_case_blind_substring_and_no_model_covers_all():
    drive = {"model": "MZQL27T6HBLA-00A07", "name": "/dev/nvme0n1"}
    assert protocol.model_fits("mzql27t6hbla", drive["model"])
    assert not protocol.model_fits("Micron_7450", drive["model"], drive["name"])
    assert protocol.model_fits(None, drive["model"])
    targets = [{"model": "Micron_7450", "version": "a"}, {"model": None, "version": "b"}]
    assert protocol.firmware_target_for(drive, targets) == targets[1]
