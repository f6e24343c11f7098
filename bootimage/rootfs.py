"""The base root filesystem: a minimal Debian with the agent's tools and the kernel's modules.

It is the slow part of a build (debootstrap, a kernel download, compressing the archive), so it is
built once per package list and kernel and kept as a compressed cpio archive.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .debian import BuildError, DebianSource

# What the agent runs on a node. python3-httpx is Debian's, so the build needs apt and nothing else.
PACKAGES = (
    "python3",
    "python3-httpx",
    "nvme-cli",
    "fio",
    "pciutils",
    "dmidecode",
    "iproute2",
    "busybox",
    "kmod",
    "udev",
    "util-linux",
    "e2fsprogs",
    "procps",
    # The attestation gate: EK, AK, credential activation and the quote (agent/tpm.py).
    "tpm2-tools",
)

# Module trees no node needs in the ephemeral environment: every megabyte of the initramfs is
# unpacked into the node's memory. GPU drivers come from the vendor (docs/pipeline.md).
MODULE_EXCLUDES = (
    "kernel/sound",
    "kernel/drivers/gpu",
    "kernel/drivers/media",
    "kernel/drivers/staging",
    "kernel/drivers/bluetooth",
    "kernel/drivers/iio",
    "kernel/drivers/isdn",
    "kernel/drivers/net/wireless",
    "kernel/drivers/net/can",
    "kernel/drivers/input/touchscreen",
    "kernel/net/bluetooth",
    "kernel/net/wireless",
    "kernel/net/mac80211",
)

# Documentation, locales and apt's state weigh on memory and are never read on a node; the apt
# sources name the build site's mirror and must not be published.
STRIP = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "var/lib/apt/lists",
    "var/cache/apt",
    "var/cache/debconf",
    "var/log",
    "etc/apt/sources.list",
    "etc/apt/sources.list.d",
    "etc/resolv.conf",
    "etc/hostname",
)


def build_base(
    source: DebianSource,
    kernel: str,
    packages: tuple[str, ...],
    extra_debs: tuple[Path, ...],
    out_dir: Path,
    log,
) -> tuple[Path, Path, str]:
    """Build the base archive; return (cpio.zst path, vmlinuz path, kernel release)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix="work-") as work:
        root = Path(work) / "root"
        _run(
            ["debootstrap", "--variant=minbase", "--components=main",
             "--include=" + ",".join(packages), source.suite, str(root), source.mirror],
            log,
        )  # fmt: skip
        for deb in extra_debs:
            shutil.copy(deb, root / "tmp" / deb.name)
            _run(["chroot", str(root), "dpkg", "-i", f"/tmp/{deb.name}"], log)
            (root / "tmp" / deb.name).unlink()
        release, vmlinuz = _install_kernel(kernel, root, Path(work), log)
        for rel in STRIP:
            target = root / rel
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
                if rel.startswith("var/"):
                    target.mkdir()
            elif target.exists() or target.is_symlink():
                target.unlink()
        (root / "etc/hostname").write_text("greenlight-node\n")
        archive = out_dir / "base.cpio.zst"
        pack_cpio(root, archive, log)
        kernel_out = out_dir / "vmlinuz"
        shutil.copy(vmlinuz, kernel_out)
    return archive, kernel_out, release


def _install_kernel(kernel: str, root: Path, work: Path, log) -> tuple[str, Path]:
    """Download the kernel package, put its (filtered) modules in the root; return release, vmlinuz."""
    debs = work / "debs"
    debs.mkdir()
    _run(["apt-get", "download", kernel], log, cwd=debs)
    deb = next(debs.glob("linux-image-*.deb"))
    tree = work / "kernel"
    _run(["dpkg-deb", "-x", str(deb), str(tree)], log)
    modules = next((tree / "lib/modules").iterdir())
    release = modules.name
    for rel in MODULE_EXCLUDES:
        shutil.rmtree(modules / rel, ignore_errors=True)
    target = root / "usr/lib/modules" / release
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(modules, target, symlinks=True)
    _run(["chroot", str(root), "depmod", "-a", release], log)
    return release, tree / "boot" / f"vmlinuz-{release}"


def pack_cpio(root: Path, archive: Path, log) -> None:
    """Archive a tree as a zstd-compressed newc cpio (what the kernel unpacks as its initramfs)."""
    files = subprocess.Popen(["find", ".", "-print0"], cwd=root, stdout=subprocess.PIPE)
    cpio = subprocess.Popen(
        ["cpio", "--null", "--create", "--format=newc", "--quiet"],
        cwd=root, stdin=files.stdout, stdout=subprocess.PIPE, stderr=log,
    )  # fmt: skip
    files.stdout.close()
    # Level 3: a good ratio at a speed a 2-core builder can afford; the kernel's zstd decoder
    # needs no long-distance window, so no --long.
    zstd = subprocess.run(
        ["zstd", "-q", "-3", "-T0", "-f", "-o", str(archive)], stdin=cpio.stdout, stderr=log
    )
    cpio.stdout.close()
    if cpio.wait() or files.wait() or zstd.returncode:
        raise BuildError(f"packing {root} into {archive} failed")


def _run(argv: list[str], log, cwd: Path | None = None) -> None:
    if shutil.which(argv[0]) is None:
        raise BuildError(f"{argv[0]} is not installed")
    result = subprocess.run(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode:
        raise BuildError(f"{' '.join(argv)} failed with {result.returncode} (see the build log)")
