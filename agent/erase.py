"""Drive erasure: which methods a drive offers, the command for each, and the read-back check.

Methods, strongest first. The cryptographic ones destroy the media encryption key, which covers
every cell including over-provisioned and retired blocks; a sanitize block erase also reaches
every cell; a format with user-data erase reaches the namespace's blocks only, so it comes last.
Sanitize overwrite is left out: it takes hours and wears the media, and a drive that offers it
offers block erase too.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
from dataclasses import dataclass

from .inventory_sources import (
    FNA_CRYPTO_ERASE,
    OACS_FORMAT_NVM,
    SANICAP_BLOCK_ERASE,
    SANICAP_CRYPTO_ERASE,
)

SANITIZE_CRYPTO = "nvme_sanitize_crypto"
SANITIZE_BLOCK = "nvme_sanitize_block"
FORMAT_CRYPTO = "nvme_format_crypto"
OPAL_PSID_REVERT = "opal_psid_revert"
FORMAT_USER_DATA = "nvme_format_user_data"
STRENGTH_ORDER = (
    SANITIZE_CRYPTO,
    SANITIZE_BLOCK,
    FORMAT_CRYPTO,
    OPAL_PSID_REVERT,
    FORMAT_USER_DATA,
)
CRYPTOGRAPHIC = {SANITIZE_CRYPTO, FORMAT_CRYPTO, OPAL_PSID_REVERT}

# Sanitize Status (SSTAT) bits 2:0 in the sanitize log.
SANITIZE_NEVER, SANITIZE_DONE, SANITIZE_RUNNING, SANITIZE_FAILED, SANITIZE_DONE_NO_DEALLOC = range(
    5
)

REGION_BYTES = 64 * 1024
REGIONS = 8


def nvme_erase_methods(sanicap: int, fna: int, oacs: int) -> list[str]:
    """The NVMe erase methods a controller's Identify data says it supports, strongest first."""
    methods = []
    if sanicap & SANICAP_CRYPTO_ERASE:
        methods.append(SANITIZE_CRYPTO)
    if sanicap & SANICAP_BLOCK_ERASE:
        methods.append(SANITIZE_BLOCK)
    if oacs & OACS_FORMAT_NVM:
        if fna & FNA_CRYPTO_ERASE:
            methods.append(FORMAT_CRYPTO)
        methods.append(FORMAT_USER_DATA)
    return methods


def offered_methods(nvme_methods: list[str], opal: bool, psid: str) -> list[str]:
    """Every method the drive offers, strongest first; PSID revert only with the drive's PSID."""
    methods = set(nvme_methods)
    if opal and psid:
        methods.add(OPAL_PSID_REVERT)
    return [m for m in STRENGTH_ORDER if m in methods]


def opal_devices(scan: str) -> set[str]:
    """Devices `sedutil-cli --scan` reports as Opal 1 or 2 ("/dev/nvme0  2  Model  Firmware")."""
    found = set()
    for line in scan.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("/dev/") and re.search(r"[12]", parts[1]):
            found.add(parts[0])
    return found


def erase_command(method: str, drive: dict) -> list[str]:
    """The command that erases `drive` by `method`."""
    namespace, controller = drive["name"], drive.get("controller") or drive["name"]
    if method == SANITIZE_CRYPTO:
        return ["nvme", "sanitize", controller, "--sanact=4"]
    if method == SANITIZE_BLOCK:
        return ["nvme", "sanitize", controller, "--sanact=2"]
    if method == FORMAT_CRYPTO:
        return ["nvme", "format", namespace, "--ses=2", "--force"]
    if method == FORMAT_USER_DATA:
        return ["nvme", "format", namespace, "--ses=1", "--force"]
    if method == OPAL_PSID_REVERT:
        if not drive.get("psid"):
            raise ValueError(f"{namespace}: PSID revert needs the drive's PSID")
        return [
            "sedutil-cli",
            "--yesIreallywanttoERASEALLmydatausingthePSID",
            drive["psid"],
            controller,
        ]
    raise ValueError(f"{namespace}: unknown erase method {method!r}")


def sanitize_status(log_json: dict) -> tuple[int, int]:
    """(SSTAT status, SPROG progress out of 65535) from `nvme sanitize-log -o json`.

    nvme-cli nests the log under the device's name and SSTAT under itself, its status a string
    such as "(1) Most Recent Sanitize Command Completed Successfully."; some releases keyed that
    string by its own text instead of "status", so the "(N)" is looked for in every value.
    """
    fields = log_json
    if "sstat" not in fields and len(fields) == 1:
        fields = next(iter(fields.values()))
    sstat = fields["sstat"]
    if isinstance(sstat, int):
        return sstat & 0x7, int(fields.get("sprog", 0))
    for value in [sstat.get("status"), *sstat.values()]:
        match = re.match(r"^\((\d+)\)", str(value))
        if match:
            return int(match.group(1)), int(fields.get("sprog", 0))
    raise ValueError(f"sanitize log without a status: {sstat}")


@dataclass(frozen=True)
class RegionSample:
    """One sampled region of a drive: where, its digest, and whether it reads as all zeros."""

    offset: int
    sha256: str
    zero: bool


def region_offsets(
    size_bytes: int, regions: int = REGIONS, length: int = REGION_BYTES
) -> list[int]:
    """Offsets spread evenly from the first block to the last whole region, aligned to 4 KiB."""
    if size_bytes < length:
        raise ValueError(f"a device of {size_bytes} bytes is smaller than one sampled region")
    last = (size_bytes - length) // 4096 * 4096
    if regions == 1 or last == 0:
        return [0]
    return sorted({(last * i // (regions - 1)) // 4096 * 4096 for i in range(regions)})


def device_size(path: str) -> int:
    """Bytes of a block device or a file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def read_regions(path: str, offsets: list[int], length: int = REGION_BYTES) -> list[RegionSample]:
    """Read each region from the medium itself, not the page cache (a format does not drop it)."""
    fd, direct = _open_uncached(path, os.O_RDONLY)
    try:
        out = []
        for offset in offsets:
            data = _pread(fd, offset, length, direct)
            out.append(
                RegionSample(offset, hashlib.sha256(data).hexdigest(), data.count(0) == len(data))
            )
        return out
    finally:
        os.close(fd)


def write_markers(path: str, offsets: list[int], length: int = REGION_BYTES) -> None:
    """Write random bytes over each region, so a region the erase missed cannot pass as erased.

    A blank drive reads as zeros before and after an erase that did nothing; with a marker
    there, only a real erase makes the region zeros or different.
    """
    fd, direct = _open_uncached(path, os.O_WRONLY)
    try:
        for offset in offsets:
            buf = mmap.mmap(-1, length)
            buf.write(os.urandom(length))
            if direct:
                os.pwritev(fd, [buf], offset)
            else:
                os.pwrite(fd, bytes(buf), offset)
            buf.close()
        os.fsync(fd)
    finally:
        os.close(fd)


def _open_uncached(path: str, flags: int) -> tuple[int, bool]:
    try:
        return os.open(path, flags | os.O_DIRECT), True
    except OSError:
        # tmpfs and some file systems refuse O_DIRECT: drop the file's cached pages instead.
        fd = os.open(path, flags)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return fd, False


def _pread(fd: int, offset: int, length: int, direct: bool) -> bytes:
    if not direct:
        return os.pread(fd, length, offset)
    buf = mmap.mmap(-1, length)  # page-aligned, as O_DIRECT requires
    try:
        got = os.preadv(fd, [buf], offset)
        return bytes(buf[:got])
    finally:
        buf.close()


def verify_readback(
    method: str, before: list[RegionSample], after: list[RegionSample]
) -> tuple[bool, str]:
    """Judge an erase by its read-back; (passed, what was seen).

    A cryptographic erase leaves the old ciphertext readable under a new key (random-looking
    data) or, on drives that deallocate, zeros; a user-data or block erase leaves zeros or a
    vendor pattern. Either way no sampled region may read back as it did before, unless it
    reads as zeros. A region that is unchanged and not zeros still holds its data.
    """
    if not before or len(before) != len(after):
        return False, "the read-back did not sample the same regions before and after"
    kept = [
        a.offset for b, a in zip(before, after, strict=True) if a.sha256 == b.sha256 and not a.zero
    ]
    if kept:
        where = ", ".join(str(o) for o in kept[:4])
        return (
            False,
            f"{len(kept)} of {len(after)} sampled regions read back unchanged (offsets {where})",
        )
    zeros = sum(1 for a in after if a.zero)
    kind = "cryptographic erase" if method in CRYPTOGRAPHIC else "erase"
    return True, (
        f"{kind}: {len(after)} sampled regions changed or read as zeros "
        f"({zeros} zeros, {len(after) - zeros} changed)"
    )
