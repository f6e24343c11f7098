"""What the VM tier needs on the machine, what is missing, and how to install it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
from pathlib import Path

# Debian packages (installed with --no-install-recommends) and a binary that proves each present.
APT_PACKAGES = {
    "qemu-system-x86": "qemu-system-x86_64",
    "qemu-utils": "qemu-img",
    "ovmf": "/usr/share/OVMF/OVMF_CODE_4M.fd",
    "libvirt-daemon-system": "/usr/sbin/libvirtd",
    "libvirt-clients": "virsh",
    "libvirt-daemon-driver-qemu": "/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so",
    "libvirt-dev": "/usr/include/libvirt/libvirt.h",
    "pkg-config": "pkg-config",
    "debootstrap": "debootstrap",
    "xorriso": "xorriso",
    "grub-efi-amd64-bin": "/usr/lib/grub/x86_64-efi/modinfo.sh",
    "grub-pc-bin": "/usr/lib/grub/i386-pc/modinfo.sh",
    "mtools": "mcopy",
    "dosfstools": "mkfs.vfat",
    "cpio": "cpio",
    "zstd": "zstd",
}
# Python modules from requirements-dev.txt.
PYTHON_MODULES = {"libvirt": "libvirt-python", "sushy_tools": "sushy-tools"}


def _present(probe: str) -> bool:
    return Path(probe).exists() if probe.startswith("/") else shutil.which(probe) is not None


def missing_packages() -> list[str]:
    """Debian packages whose files are not on this machine."""
    return [package for package, probe in APT_PACKAGES.items() if not _present(probe)]


def missing_python_modules() -> list[str]:
    """requirements-dev.txt entries that are not importable."""
    return [
        req for module, req in PYTHON_MODULES.items() if importlib.util.find_spec(module) is None
    ]


def install_packages(packages: list[str]) -> None:
    """apt-get install the packages (root only)."""
    if not packages:
        return
    if os.geteuid() != 0:
        raise PermissionError(f"installing {' '.join(packages)} needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
        check=True, env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def kvm_works(kernel: Path, timeout: float = 15.0) -> bool:
    """Whether QEMU can run a guest under KVM here: boot `kernel` accelerated and wait for its banner.

    Opening /dev/kvm, or even starting a paused machine, proves nothing: on a host that is itself a
    VM, nested KVM can be a paravirtual flavour where an ordinary guest never prints a line (seen:
    no banner after 20 s under KVM, 4 s under plain emulation).
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK) or not shutil.which("qemu-system-x86_64"):
        return False
    proc = subprocess.Popen(
        ["qemu-system-x86_64", "-accel", "kvm", "-m", "256", "-nographic", "-nodefaults",
         "-serial", "stdio", "-no-reboot", "-kernel", str(kernel),
         "-append", "console=ttyS0 earlyprintk=ttyS0 panic=-1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    seen = bytearray()
    os.set_blocking(proc.stdout.fileno(), False)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            seen += proc.stdout.read() or b""
            if b"Linux version" in seen:
                return True
            time.sleep(0.2)
        return False
    finally:
        proc.kill()
        proc.wait()
