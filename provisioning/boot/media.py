"""Per-node boot media: Greenlight's ephemeral ISO with one node's kernel arguments in it.

The base ISO (built by `python -m bootimage`) carries one marker on its kernel line; a node's ISO
is the same image, remastered with the marker replaced by that node's arguments (Greenlight's
URL, the run's one-time boot credential). Only grub.cfg changes: the kernel, initramfs and both
boot images (BIOS and UEFI El Torito, the hybrid MBR/GPT) are replayed from the base unchanged.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bootimage import MARKER

GRUB_CFG = "/boot/grub/grub.cfg"
# One kernel argument: key or key=value. GRUB expands $ and honours quotes, braces, ; and # on
# its `linux` line, and a space or newline would start a new argument or command: none may pass.
KERNEL_ARG = re.compile(r"[A-Za-z0-9_.\-]+(=[A-Za-z0-9_.:/\-+,@%~=]*)?")
# The ISO9660 primary volume descriptor sits at sector 16; its modification date (16 digits at
# byte 830) is the filesystem UUID that grub-mkrescue's EFI image searches for its root.
PVD_OFFSET = 16 * 2048
PVD_MODIFIED = slice(830, 846)


class BootMediaError(Exception):
    """The node's boot medium cannot be made from this base or with these arguments."""


def validate_kernel_args(kernel_args: str) -> list[str]:
    """The arguments, one per item; raise on anything that could inject another argument or command."""
    args = kernel_args.split(" ")
    for arg in args:
        if not KERNEL_ARG.fullmatch(arg):
            raise BootMediaError(
                f"kernel argument {arg!r} is not key or key=value of safe characters"
            )
    return args


def format_kernel_args(args: dict[str, str]) -> str:
    """`key=value` arguments joined by spaces; raise if a value would split into another argument."""
    text = " ".join(f"{key}={value}" for key, value in args.items())
    parsed = validate_kernel_args(text)
    if len(parsed) != len(args):
        raise BootMediaError("a kernel argument's value contains a space")
    return text


def volume_uuid(iso: Path) -> str:
    """The ISO's volume modification date, which GRUB reads as the filesystem's UUID."""
    with iso.open("rb") as image:
        image.seek(PVD_OFFSET)
        pvd = image.read(2048)
    if pvd[1:6] != b"CD001":
        raise BootMediaError(f"{iso} is not an ISO 9660 image")
    stamp = pvd[PVD_MODIFIED].decode("ascii", "replace")
    if not stamp.isdigit():
        raise BootMediaError(f"{iso} has no volume modification date")
    return stamp


def read_iso_file(iso: Path, path: str) -> bytes:
    """One file's bytes out of an ISO."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "extracted"
        _xorriso(["-osirrox", "on", "-indev", str(iso), "-extract", path, str(target)])
        if not target.exists():
            raise BootMediaError(f"{iso} holds no {path}")
        return target.read_bytes()


def boot_platforms(iso: Path) -> list[str]:
    """The El Torito boot images' platforms, in catalog order (BIOS, UEFI for our hybrid ISO)."""
    report = _xorriso(["-indev", str(iso), "-report_el_torito", "plain"])
    return re.findall(r"^El Torito boot img :\s+\d+\s+(\S+)", report, re.MULTILINE)


def build_node_iso(base_iso: Path, kernel_args: str, out: Path) -> Path:
    """Write `out`: the base ISO with its marker replaced by `kernel_args`; verified by read-back."""
    validate_kernel_args(kernel_args)
    template = read_iso_file(base_iso, GRUB_CFG).decode()
    if template.count(MARKER) != 1:
        raise BootMediaError(f"{base_iso}'s {GRUB_CFG} must carry {MARKER} exactly once")
    config = template.replace(MARKER, kernel_args)
    base_platforms = boot_platforms(base_iso)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".boot-media-") as tmp:
        cfg = Path(tmp) / "grub.cfg"
        cfg.write_text(config)
        staged = Path(tmp) / out.name
        _xorriso(
            ["-indev", str(base_iso), "-outdev", str(staged),
             # Replay keeps the boot images, the hybrid MBR/GPT and the volume date (GRUB's EFI
             # image finds its root by it). grub-mkrescue's HFS+/APM hybrid (for Intel Macs) does
             # not survive a replay (xorriso 1.5.4: "GPT partitions 1 and 2 overlap"): drop it.
             "-boot_image", "any", "replay", "-hfsplus", "off",
             "-map", str(cfg), GRUB_CFG, "-end"]
        )  # fmt: skip
        if read_iso_file(staged, GRUB_CFG).decode() != config:
            raise BootMediaError(f"{staged}'s {GRUB_CFG} does not read back as written")
        if boot_platforms(staged) != base_platforms:
            raise BootMediaError(f"{staged} lost boot images: {boot_platforms(staged)}")
        if volume_uuid(staged) != volume_uuid(base_iso):
            raise BootMediaError(f"{staged} changed the volume UUID GRUB searches for")
        os.replace(staged, out)
    return out


def _xorriso(args: list[str]) -> str:
    if shutil.which("xorriso") is None:
        raise BootMediaError("xorriso is not installed")
    result = subprocess.run(
        ["xorriso", "-abort_on", "FAILURE", *args], capture_output=True, text=True
    )
    if result.returncode:
        raise BootMediaError(f"xorriso {' '.join(args[:4])} ...: {result.stderr.strip()[-800:]}")
    return result.stdout
