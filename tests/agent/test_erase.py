"""Erase: the method chosen, and the read-back judged on real blocks of a file-backed disk.

No NVMe controller exists on the test machine, so the one seam is the controller's own act: the
`nvme format`/`nvme sanitize` command is answered by really rewriting the file-backed disk the
way that erase leaves a drive (zeros, random data, nothing, half). Marking, sampling, the
command line and the verdict are SystemHardware's and secure_erase's real code on real I/O.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from agent import erase
from agent.commands import CommandFailed, _erase_one, choose_erase_method, secure_erase
from agent.hardware import SystemHardware
from agent.tools import Completed

from .recorded import sample

DISK_BYTES = 64 * 1024 * 1024


class Controller:
    """Stands in for the drive's controller: executes an erase command on the backing file."""

    def __init__(self, path, effect: str) -> None:
        self.path, self.effect = path, effect
        self.commands: list[list[str]] = []

    async def run(self, cmd, log=None, timeout=None):
        self.commands.append(cmd)
        size = os.path.getsize(self.path)
        with open(self.path, "r+b") as disk:
            if self.effect == "zeros":
                disk.write(bytes(size))
            elif self.effect == "random":
                disk.write(os.urandom(size))
            elif self.effect == "first_half_zeros":
                disk.write(bytes(size // 2))
            elif self.effect == "refused":
                return 5, "NVMe status: Access Denied (0x4286)"
        return 0, "Success formatting namespace:1"

    async def capture(self, cmd):
        # The sanitize log of a controller whose sanitize has completed, as nvme-cli 2.x's
        # json_sanitize_log prints it (device name, then sstat with its status string).
        return Completed(0, sample("nvme-sanitize-log-done.nvmecli2.json"))


def _disk(tmp_path, contents: str = "blank"):
    path = tmp_path / "nvme0n1"
    with open(path, "wb") as disk:
        if contents == "data":
            disk.write(os.urandom(DISK_BYTES))
        else:
            disk.truncate(DISK_BYTES)  # a blank drive reads as zeros, as QEMU's fresh NVMe does
    return str(path)


def _drive(path, methods):
    return {
        "index": "0",
        "name": path,
        "controller": path,
        "serial": "SN-QEMU-0",
        "model": "QEMU NVMe Ctrl",
        "size_bytes": DISK_BYTES,
        "erase_methods": methods,
    }


def _erase(tmp_path, effect, methods, contents="blank"):
    path = _disk(tmp_path, contents)
    controller = Controller(path, effect)
    hw = SystemHardware(run=controller.run, capture=controller.capture, sleep=_no_wait)
    lines: list[str] = []
    report = asyncio.run(_erase_one(hw, _drive(path, methods), {}, lines.append))
    return report, controller


async def _no_wait(seconds):
    return None


def test_a_user_data_erase_that_zeroes_a_blank_drive_passes(tmp_path):
    report, controller = _erase(tmp_path, "zeros", [erase.FORMAT_USER_DATA])
    assert report["result"] == "passed", report["verification"]
    assert report["method"] == erase.FORMAT_USER_DATA
    assert controller.commands == [
        ["nvme", "format", str(tmp_path / "nvme0n1"), "--ses=1", "--force"]
    ]
    assert "marked before the erase" in report["verification"]


def test_an_erase_that_left_the_blocks_as_they_were_fails(tmp_path):
    # The tool said success; without the markers a blank drive would read zeros either way.
    report, _ = _erase(tmp_path, "nothing", [erase.FORMAT_USER_DATA])
    assert report["result"] == "failed"
    assert "read back unchanged" in report["verification"]


def test_an_erase_that_reached_half_the_drive_fails(tmp_path):
    report, _ = _erase(tmp_path, "first_half_zeros", [erase.FORMAT_USER_DATA], contents="data")
    assert report["result"] == "failed"
    assert "read back unchanged" in report["verification"]


def test_a_crypto_erase_leaves_random_data_and_passes(tmp_path):
    report, controller = _erase(
        tmp_path, "random", [erase.FORMAT_CRYPTO, erase.FORMAT_USER_DATA], contents="data"
    )
    assert report["result"] == "passed", report["verification"]
    assert controller.commands[0][-2:] == ["--ses=2", "--force"]
    assert report["verification"].startswith("cryptographic erase")


def test_a_sanitize_waits_for_the_sanitize_log_to_say_done(tmp_path):
    report, controller = _erase(
        tmp_path, "random", [erase.SANITIZE_CRYPTO, erase.FORMAT_CRYPTO], contents="data"
    )
    assert report["result"] == "passed", report["verification"]
    assert controller.commands == [["nvme", "sanitize", str(tmp_path / "nvme0n1"), "--sanact=4"]]


def test_a_refused_erase_fails_with_the_tools_exit_code(tmp_path):
    report, _ = _erase(tmp_path, "refused", [erase.FORMAT_USER_DATA])
    assert report["result"] == "failed"
    assert report["verification"] == "nvme exited 5"


def test_a_drive_offering_no_method_fails_naming_the_drive(tmp_path):
    class Inventory(SystemHardware):
        async def inventory(self):
            return {"drives": [_drive("/dev/nvme3n1", []) | {"serial": "S5X9NG0T116027"}]}

    with pytest.raises(CommandFailed) as failed:
        asyncio.run(secure_erase(Inventory(), None, {}, lambda line: None))
    assert "/dev/nvme3n1" in str(failed.value)
    assert "S5X9NG0T116027" in str(failed.value)
    [drive] = failed.value.result["drives"]
    assert "offers no erase method" in drive["verification"]


@pytest.mark.parametrize(
    ("drive", "method"),
    [
        # QEMU 7.2's NVMe: sanicap 0, Format NVM without crypto erase (VM-NODES.md).
        ({"erase_methods": erase.nvme_erase_methods(0, 0, 0x2)}, erase.FORMAT_USER_DATA),
        ({"erase_methods": erase.nvme_erase_methods(0x3, 0x4, 0x2)}, erase.SANITIZE_CRYPTO),
        ({"erase_methods": erase.nvme_erase_methods(0x2, 0x4, 0x2)}, erase.SANITIZE_BLOCK),
        ({"erase_methods": erase.nvme_erase_methods(0, 0x4, 0x2)}, erase.FORMAT_CRYPTO),
        (
            {"erase_methods": [erase.FORMAT_USER_DATA], "opal": True, "psid": "P"},
            erase.OPAL_PSID_REVERT,
        ),
        ({"erase_methods": [], "opal": True}, None),
        ({"erase_methods": []}, None),
    ],
)
def test_the_strongest_method_the_drive_offers_is_chosen(drive, method):
    assert choose_erase_method(drive) == method


def test_a_psid_from_the_command_enables_psid_revert(tmp_path):
    drive = {"serial": "S1", "opal": True, "erase_methods": [erase.FORMAT_USER_DATA]}
    assert choose_erase_method(drive, {"S1": "PSID"}) == erase.OPAL_PSID_REVERT
    assert erase.erase_command(
        erase.OPAL_PSID_REVERT, {"name": "/dev/nvme0n1", "controller": "/dev/nvme0", "psid": "PSID"}
    ) == [
        "sedutil-cli",
        "--yesIreallywanttoERASEALLmydatausingthePSID",
        "PSID",
        "/dev/nvme0",
    ]


def test_the_sanitize_log_status_string_is_read():
    log = json.loads(sample("nvme-sanitize-log-done.nvmecli2.json"))
    assert erase.sanitize_status(log) == (erase.SANITIZE_DONE, 65535)
    running = {
        "nvme0": {
            "sprog": 32768,
            "sstat": {
                "global_erased": 0,
                "no_cmplted_passes": 0,
                "status": "(2) Sanitize in Progress.",
            },
        }
    }
    assert erase.sanitize_status(running) == (erase.SANITIZE_RUNNING, 32768)


def test_psid_revert_with_the_psid_the_command_carried(tmp_path):
    path = _disk(tmp_path, "data")
    controller = Controller(path, "random")
    hw = SystemHardware(run=controller.run, capture=controller.capture, sleep=_no_wait)
    drive = _drive(path, [erase.FORMAT_USER_DATA]) | {"opal": True}
    report = asyncio.run(_erase_one(hw, drive, {"SN-QEMU-0": "PSID-ON-THE-LABEL"}, print))
    assert report["result"] == "passed", report["verification"]
    assert report["method"] == erase.OPAL_PSID_REVERT
    assert controller.commands == [
        ["sedutil-cli", "--yesIreallywanttoERASEALLmydatausingthePSID", "PSID-ON-THE-LABEL", path]
    ]
