"""The install record: what os_install wrote to a disk, kept on that disk itself.

Layout. The record occupies the 1 MiB region that ends 1 MiB before the end of the disk:
bytes [size - 2 MiB, size - 1 MiB). The image is written from byte 0 and must end before the
region; GPT's backup header and entries lie in the last 1 MiB, which the record never touches.
The region starts with a 16-byte magic, then a 4-byte big-endian length N, the 32-byte SHA-256
of the payload, and N bytes of UTF-8 JSON:

    {"version": 1, "image_sha256": "...", "image_bytes": 123, "signature_verified": true,
     "installed_at": "2026-11-24T12:00:00+00:00", "host_credential": "..." (optional)}

The rest of the region is zeros. An image whose partitions are later grown to the end of the
disk (cloud-init growpart) must stop 2 MiB short of it, or the file system may reuse the region.

The installed OS's agent finds its boot disk as the disk that holds a record (`find_installed`)
and reads the host credential from it; inventory reports the record without the credential.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

MAGIC = b"GREENLIGHT-INST1"
MIB = 1024 * 1024
REGION_BYTES = MIB
TAIL_GAP_BYTES = MIB
_HEADER = struct.Struct(">16sI32s")
VERSION = 1
# Kernel block devices that are never an install target.
_NOT_DISKS = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd")


class InstallRecordError(Exception):
    """A record is damaged, or cannot be placed on this disk."""


def region_offset(disk_bytes: int) -> int:
    """Where the record region begins on a disk of `disk_bytes`."""
    if disk_bytes < REGION_BYTES + TAIL_GAP_BYTES + MIB:
        raise InstallRecordError(f"a disk of {disk_bytes} bytes is too small for an install record")
    return (disk_bytes - REGION_BYTES - TAIL_GAP_BYTES) // 4096 * 4096


def _size(device: str | Path) -> int:
    fd = os.open(device, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def write_record(device: str | Path, record: dict[str, Any]) -> int:
    """Write `record` into the disk's record region; return the region's offset.

    Refuses a record whose image would reach into the region (the image was written first).
    """
    offset = region_offset(_size(device))
    if int(record.get("image_bytes", 0)) > offset:
        raise InstallRecordError(
            f"{device}: the image ({record['image_bytes']} bytes) reaches the install record "
            f"region at byte {offset}"
        )
    payload = json.dumps({"version": VERSION, **record}, sort_keys=True).encode()
    header = _HEADER.pack(MAGIC, len(payload), hashlib.sha256(payload).digest())
    block = header + payload
    if len(block) > REGION_BYTES:
        raise InstallRecordError(f"{device}: install record of {len(block)} bytes is too large")
    fd = os.open(device, os.O_WRONLY)
    try:
        os.pwrite(fd, block + bytes(REGION_BYTES - len(block)), offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    return offset


def read_record(device: str | Path) -> dict[str, Any] | None:
    """The record on `device`, or None where the region holds none (never installed, or erased).

    A region that starts with the magic but fails its checksum raises: it was written by
    os_install and has since been damaged, which a person must hear about.
    """
    try:
        offset = region_offset(_size(device))
    except InstallRecordError:
        return None
    fd = os.open(device, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, offset, REGION_BYTES, os.POSIX_FADV_DONTNEED)
        head = os.pread(fd, _HEADER.size, offset)
        if len(head) < _HEADER.size:
            return None
        magic, length, digest = _HEADER.unpack(head)
        if magic != MAGIC:
            return None
        if length > REGION_BYTES - _HEADER.size:
            raise InstallRecordError(f"{device}: install record claims {length} bytes")
        payload = os.pread(fd, length, offset + _HEADER.size)
    finally:
        os.close(fd)
    if hashlib.sha256(payload).digest() != digest:
        raise InstallRecordError(f"{device}: install record fails its checksum")
    return json.loads(payload)


def whole_disks(sys_block: Path = Path("/sys/block"), dev: Path = Path("/dev")) -> list[str]:
    """Whole disks of this machine, NVMe namespaces first, each group in name order."""
    if not sys_block.is_dir():
        return []
    names = [p.name for p in sys_block.iterdir() if not p.name.startswith(_NOT_DISKS)]
    names.sort(key=lambda n: (not n.startswith("nvme"), n))
    return [str(dev / n) for n in names]


def find_installed(disks: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The first of `disks` that holds an install record, with its record."""
    for disk in disks:
        try:
            record = read_record(disk)
        except OSError:
            continue  # a disk that cannot be opened (no medium) holds no record
        if record is not None:
            return disk, record
    return None


def public_view(record: dict[str, Any]) -> dict[str, Any]:
    """The record as inventory reports it: everything but the host credential."""
    return {k: v for k, v in record.items() if k != "host_credential"}


def host_credential(
    sys_block: Path = Path("/sys/block"), dev: Path = Path("/dev")
) -> tuple[str, str] | None:
    """(boot disk, host credential) for the installed OS's agent, or None when none was given.

    The boot disk is the disk that holds an install record; the credential is what install_os
    was handed for this host.
    """
    found = find_installed(whole_disks(sys_block, dev))
    if found is None or not found[1].get("host_credential"):
        return None
    return found[0], str(found[1]["host_credential"])
