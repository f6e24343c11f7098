"""The install record on a real file-backed disk (a sparse file): real I/O, no mock."""

from __future__ import annotations

import asyncio
import hashlib
import os

import httpx
import pytest

from agent import install_record as ir
from agent.commands import install_os
from agent.hardware import SystemHardware
from agent.tools import Completed

from .recorded import RecordedTools, sample

GIB = 1024**3


def _disk(path, size=4 * GIB):
    with open(path, "wb") as disk:
        disk.truncate(size)
    return str(path)


def test_the_record_sits_in_the_mib_that_ends_one_mib_before_the_end(tmp_path):
    disk = _disk(tmp_path / "nvme0n1")
    offset = ir.write_record(disk, {"image_sha256": "a" * 64, "image_bytes": 1000})
    assert offset == 4 * GIB - 2 * ir.MIB
    with open(disk, "rb") as raw:
        raw.seek(offset)
        assert raw.read(16) == ir.MAGIC
        raw.seek(4 * GIB - ir.MIB)
        assert raw.read(ir.MIB) == bytes(ir.MIB)  # the backup GPT's last MiB is untouched
        raw.seek(0)
        assert raw.read(4096) == bytes(4096)  # and so is the image's start
    assert ir.read_record(disk) == {"version": 1, "image_sha256": "a" * 64, "image_bytes": 1000}


def test_a_disk_never_installed_has_no_record(tmp_path):
    assert ir.read_record(_disk(tmp_path / "blank")) is None


def test_an_image_reaching_the_record_region_is_refused(tmp_path):
    disk = _disk(tmp_path / "small", 64 * ir.MIB)
    with pytest.raises(ir.InstallRecordError, match="reaches the install record region"):
        ir.write_record(disk, {"image_sha256": "a" * 64, "image_bytes": 63 * ir.MIB})


def test_a_damaged_record_is_an_error_not_an_absent_one(tmp_path):
    disk = _disk(tmp_path / "nvme0n1")
    offset = ir.write_record(disk, {"image_sha256": "a" * 64, "image_bytes": 10})
    with open(disk, "r+b") as raw:
        raw.seek(offset + 60)
        raw.write(b"X")
    with pytest.raises(ir.InstallRecordError, match="checksum"):
        ir.read_record(disk)
    hw = SystemHardware(boot_disk=disk, sys_root=tmp_path / "no-sys")
    assert hw._os_image() == {
        "sha256": "",
        "record_error": f"{disk}: install record fails its checksum",
    }


def test_the_installed_os_finds_its_boot_disk_by_its_record(tmp_path):
    (tmp_path / "sys/block/nvme0n1").mkdir(parents=True)
    (tmp_path / "sys/block/nvme1n1").mkdir(parents=True)
    (tmp_path / "sys/block/loop0").mkdir(parents=True)
    dev = tmp_path / "dev"
    dev.mkdir()
    _disk(dev / "nvme0n1")
    second = _disk(dev / "nvme1n1")
    ir.write_record(
        second, {"image_sha256": "b" * 64, "image_bytes": 10, "host_credential": "hc-1"}
    )
    disks = ir.whole_disks(tmp_path / "sys/block", dev)
    assert disks == [str(dev / "nvme0n1"), second]
    disk, record = ir.find_installed(disks)
    assert disk == second
    assert record["host_credential"] == "hc-1"
    assert ir.host_credential(tmp_path / "sys/block", dev) == (second, "hc-1")


class _Artifacts:
    """A real HTTP server on loopback serving one image, as Greenlight's artifact server does."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    async def __aenter__(self):
        async def serve(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % len(self.body)
                + self.body
            )
            await writer.drain()
            writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/os.img"
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()


class _TrustedSigner(SystemHardware):
    """The node's trust store: gpgv needs a keyring this test machine has not got, so the
    signature check is the one part answered here (by comparing to the expected signature)."""

    async def verify_signature(self, image, signature):
        return signature == "signed:" + hashlib.sha256(image.read_bytes()).hexdigest()


def test_install_os_writes_the_image_and_a_record_inventory_and_attestation_read_back(tmp_path):

    (tmp_path / "sys/block/nvme0n1").mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    disk = _disk(tmp_path / "dev/nvme0n1", 256 * ir.MIB)
    body = os.urandom(3 * ir.MIB + 123)
    sha = hashlib.sha256(body).hexdigest()
    tools = RecordedTools(
        {
            ("dmidecode", "-t", "1"): Completed(0, sample("dmidecode-t1-asrock-e3c246d4i.txt")),
            ("ip", "-d", "-j", "link"): Completed(0, sample("ip-d-j-link-this-machine.json")),
        }
    )
    hw = _TrustedSigner(capture=tools.capture, sys_root=tmp_path / "sys", dev_root=tmp_path / "dev")

    async def go():
        async with _Artifacts(body) as artifacts, httpx.AsyncClient() as http:
            params = {
                "url": artifacts.url,
                "sha256": sha,
                "signature": "signed:" + sha,
                "host_credential": "host-secret-1",
            }
            return await install_os(hw, http, params, lambda line: None)

    result = asyncio.run(go())
    assert result["sha256"] == sha
    with open(disk, "rb") as raw:
        assert raw.read(len(body)) == body
    record = ir.read_record(disk)
    assert record["image_sha256"] == sha
    assert record["image_bytes"] == len(body)
    assert record["signature_verified"] is True
    assert record["host_credential"] == "host-secret-1"
    os_image = asyncio.run(hw.inventory())["os_image"]
    assert os_image["sha256"] == sha
    assert os_image["disk"] == disk
    assert "host_credential" not in os_image  # the credential never leaves the node
    report = asyncio.run(hw.attestation_report())
    assert (report["image_sha256"], report["signature_verified"]) == (sha, True)


def test_install_os_goes_on_the_disk_the_manifest_names(tmp_path):
    """A VM's NVMe is for data and the erase; the manifest puts the OS on its SATA disk."""
    for name in ("nvme0n1", "sda"):
        (tmp_path / "sys/block" / name).mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    nvme = _disk(tmp_path / "dev/nvme0n1", 64 * ir.MIB)
    sata = _disk(tmp_path / "dev/sda", 64 * ir.MIB)
    body = os.urandom(ir.MIB)
    sha = hashlib.sha256(body).hexdigest()
    hw = _TrustedSigner(
        capture=RecordedTools({}).capture, sys_root=tmp_path / "sys", dev_root=tmp_path / "dev"
    )

    async def go():
        async with _Artifacts(body) as artifacts, httpx.AsyncClient() as http:
            params = {"url": artifacts.url, "sha256": sha, "signature": "signed:" + sha}
            return await install_os(hw, http, params | {"disk": sata}, lambda line: None)

    asyncio.run(go())
    assert ir.read_record(sata)["image_sha256"] == sha
    assert ir.find_installed([nvme, sata])[0] == sata
    with open(nvme, "rb") as raw:
        assert raw.read(len(body)) != body
