"""libvirtd and virtlogd for the VM tier, configured for a container without systemd."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import libvirt

QEMU_CONF = Path("/etc/libvirt/qemu.conf")
DEFAULT_NETWORK_AUTOSTART = Path("/etc/libvirt/qemu/networks/autostart/default.xml")
URI = "qemu:///system"
POOL = "default"  # sushy-tools uploads inserted media into the pool of this name
CONF_MARK = "# Greenlight VM tier"
# In a container there is no systemd, no cgroup delegation and no SELinux/AppArmor: QEMU runs as
# root with no namespaces, or the domain does not start.
CONF_BLOCK = f"""
{CONF_MARK}: QEMU in a container (no systemd, cgroups or security driver)
user = "root"
group = "root"
security_driver = "none"
namespaces = []
cgroup_controllers = []
"""


# libvirt prints every error it raises to stderr as well; the exceptions carry them already.
libvirt.registerErrorHandler(lambda _ctx, _err: None, None)


class LibvirtError(Exception):
    """libvirt cannot be brought up or does not do what the tier needs."""


def configure(qemu_conf: Path = QEMU_CONF) -> None:
    """Write the container settings once; drop the default NAT network's autostart (no bridge)."""
    text = qemu_conf.read_text()
    if CONF_MARK not in text:
        qemu_conf.write_text(text.rstrip("\n") + "\n" + CONF_BLOCK)
    DEFAULT_NETWORK_AUTOSTART.unlink(missing_ok=True)


def _answering() -> bool:
    try:
        libvirt.open(URI).close()
        return True
    except libvirt.libvirtError:
        return False


class LibvirtDaemons:
    """Start virtlogd and libvirtd unless they already run; stop only what we started."""

    def __init__(self) -> None:
        self.started: list[int] = []

    def start(self, timeout: float = 30.0) -> None:
        configure()
        if _answering():
            return
        for daemon, pidfile in (
            ("virtlogd", "/run/virtlogd.pid"),
            ("libvirtd", "/run/libvirtd.pid"),
        ):
            subprocess.run([daemon, "-d"], check=True)
            self.started.append(_read_pid(Path(pidfile), daemon))
        deadline = time.monotonic() + timeout
        while not _answering():
            if time.monotonic() > deadline:
                raise LibvirtError("libvirtd started but does not answer on " + URI)
            time.sleep(0.2)

    def stop(self) -> None:
        for pid in reversed(self.started):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
        self.started.clear()


def _read_pid(pidfile: Path, daemon: str) -> int:
    for _ in range(50):
        if pidfile.exists() and pidfile.read_text().strip():
            return int(pidfile.read_text().strip())
        time.sleep(0.1)
    raise LibvirtError(f"{daemon} wrote no {pidfile}")


def ensure_pool(conn: libvirt.virConnect, path: Path) -> None:
    """A running directory pool named `default` at `path` (sushy uploads ISOs into it)."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        pool = conn.storagePoolLookupByName(POOL)
    except libvirt.libvirtError:
        pool = conn.storagePoolDefineXML(
            f"<pool type='dir'><name>{POOL}</name><target><path>{path}</path></target></pool>"
        )
    if not pool.isActive():
        pool.create()
    pool.refresh()
