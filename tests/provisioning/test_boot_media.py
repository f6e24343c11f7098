"""A node's boot ISO is the base ISO remastered by real xorriso, with only its kernel line changed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bootimage import MARKER
from provisioning.boot.media import (
    BootMediaError,
    boot_platforms,
    build_node_iso,
    format_kernel_args,
    read_iso_file,
    validate_kernel_args,
    volume_uuid,
)

NODE_ARGS = (
    "greenlight.url=https://10.0.2.2:8443/agent greenlight.credential=Zk3-q_9x "
    "greenlight.environment=ephemeral"
)
KERNEL = b"not a kernel, but bytes that must come through unchanged\n" * 64


def _mkrescue(tree: Path, out: Path) -> Path:
    if shutil.which("grub-mkrescue") is None:
        pytest.fail(
            "grub-mkrescue is missing: apt-get install grub-common grub-pc-bin grub-efi-amd64-bin xorriso mtools"
        )
    subprocess.run(["grub-mkrescue", "-o", str(out), str(tree)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def base_iso(tmp_path_factory) -> Path:
    """A real hybrid ISO (BIOS and UEFI) with the marker on its kernel line, like bootimage's."""
    tree = tmp_path_factory.mktemp("tree")
    (tree / "boot/grub").mkdir(parents=True)
    (tree / "boot/vmlinuz").write_bytes(KERNEL)
    (tree / "boot/grub/grub.cfg").write_text(
        f'menuentry "Greenlight" {{\n  linux /boot/vmlinuz console=ttyS0 {MARKER}\n}}\n'
    )
    return _mkrescue(tree, tmp_path_factory.mktemp("base") / "base.iso")


def test_node_iso_carries_the_args_and_both_boot_images(base_iso, tmp_path):
    before = base_iso.read_bytes()

    out = build_node_iso(base_iso, NODE_ARGS, tmp_path / "node.iso")

    config = read_iso_file(out, "/boot/grub/grub.cfg").decode()
    assert f"linux /boot/vmlinuz console=ttyS0 {NODE_ARGS}\n" in config
    assert MARKER not in config
    assert boot_platforms(out) == ["BIOS", "UEFI"]
    assert volume_uuid(out) == volume_uuid(base_iso)  # GRUB's EFI image finds its root by it
    assert read_iso_file(out, "/boot/vmlinuz") == KERNEL
    assert base_iso.read_bytes() == before
    assert list(tmp_path.iterdir()) == [out]  # no staging left behind


def test_the_hybrid_disk_layout_survives(base_iso, tmp_path):
    out = build_node_iso(base_iso, NODE_ARGS, tmp_path / "node.iso")

    report = subprocess.run(
        ["xorriso", "-indev", str(out), "-report_system_area", "plain"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert "protective-msdos-label" in report and "GPT" in report
    assert "GPT partition path :   2  /efi.img" in report  # the ESP a disk boot under UEFI needs


@pytest.mark.parametrize(
    "args",
    [
        "greenlight.credential=a\ninitrd /evil",  # a second GRUB command
        "greenlight.credential=$root",  # GRUB variable expansion
        'greenlight.credential="x"',
        "greenlight.credential=x;reboot",
        "greenlight.credential=x}",
        "greenlight.credential=x  init=/bin/sh",
        "",
    ],
)
def test_unsafe_args_are_refused_and_nothing_is_written(base_iso, tmp_path, args):
    with pytest.raises(BootMediaError):
        build_node_iso(base_iso, args, tmp_path / "node.iso")
    assert list(tmp_path.iterdir()) == []


def test_safe_args_pass_validation():
    assert validate_kernel_args(NODE_ARGS) == NODE_ARGS.split(" ")


def test_a_value_cannot_smuggle_in_a_second_argument():
    assert format_kernel_args({"greenlight.credential": "Zk3"}) == "greenlight.credential=Zk3"
    with pytest.raises(BootMediaError):
        format_kernel_args({"greenlight.credential": "x init=/bin/sh"})
    with pytest.raises(BootMediaError):
        format_kernel_args({"greenlight.credential": "x\ninit=/bin/sh"})


def test_a_base_without_the_marker_is_refused(tmp_path):
    tree = tmp_path / "tree"
    (tree / "boot/grub").mkdir(parents=True)
    (tree / "boot/grub/grub.cfg").write_text("menuentry x {\n  linux /boot/vmlinuz\n}\n")
    base = _mkrescue(tree, tmp_path / "plain.iso")

    with pytest.raises(BootMediaError, match="exactly once"):
        build_node_iso(base, NODE_ARGS, tmp_path / "out" / "node.iso")
    assert not (tmp_path / "out" / "node.iso").exists()


def test_a_file_that_is_no_iso_is_refused(tmp_path):
    junk = tmp_path / "junk.iso"
    junk.write_bytes(b"\0" * 65536)
    with pytest.raises(BootMediaError):
        build_node_iso(junk, NODE_ARGS, tmp_path / "node.iso")
