"""Bring the VM tier up (libvirt, N VMs, the Redfish emulator) and tear it down to nothing."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import libvirt

from lab.sushy import Sushy

from . import libvirt_host
from .domain import NAME_PREFIX, VmSpec, domain_xml
from .packages import missing_packages, missing_python_modules
from .sushy import start_vm_bmc

DISK_BYTES = 1 << 30  # the OS image (a hybrid ISO, ~160 MB) is written here
NVME_BYTES = 512 << 20


class TierUnavailable(Exception):
    """The VM tier cannot run on this machine; the message says what is missing."""


@dataclass
class VmNode:
    """One VM and its BMC: an emulator of its own, as each real server has its own BMC."""

    spec: VmSpec
    uuid: str
    bmc: Sushy | None = None

    @property
    def redfish_path(self) -> str:
        return f"/redfish/v1/Systems/{self.uuid}"


@dataclass
class VmTier:
    """N VMs, each behind its own Redfish emulator. Use as a context manager, or call up() and down()."""

    workdir: Path
    count: int
    kvm: bool = False
    # Which VMs (by position, from the first) have a TPM 2.0; the rest have none.
    tpm: tuple[bool, ...] = ()
    nodes: list[VmNode] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workdir = self.workdir.resolve()  # libvirt resolves paths in its own working directory
        self.drive_dir = _memory_dir(self.workdir)
        self.daemons = libvirt_host.LibvirtDaemons()

    def __enter__(self) -> VmTier:
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self) -> None:
        missing = missing_packages() + missing_python_modules()
        if missing:
            raise TierUnavailable("missing: " + " ".join(missing) + " (manage.py vmlab --install)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.daemons.start()
        with libvirt.open(libvirt_host.URI) as conn:
            libvirt_host.ensure_pool(conn, self.workdir / "pool")
            _remove_domains(conn)
            for index in range(1, self.count + 1):
                tpm = index <= len(self.tpm) and self.tpm[index - 1]
                spec = VmSpec(index, self.workdir / "vms", self.drive_dir, tpm=tpm)
                self.nodes.append(VmNode(spec, _define(conn, spec, self.kvm)))
        # Greenlight's Redfish client drives a BMC's first system: one emulator per VM, each
        # serving only its own domain.
        for node in self.nodes:
            node.bmc = start_vm_bmc(self.workdir / "bmc" / node.spec.name, [node.uuid])

    def down(self) -> None:
        """Stop the emulators, destroy and undefine every tier VM, stop daemons we started."""
        for node in self.nodes:
            if node.bmc:
                node.bmc.stop()
                node.bmc = None
        try:
            with libvirt.open(libvirt_host.URI) as conn:
                _remove_domains(conn)
                try:
                    pool = conn.storagePoolLookupByName(libvirt_host.POOL)
                    if pool.isActive():
                        pool.destroy()
                    pool.undefine()
                except libvirt.libvirtError:
                    pass
        except libvirt.libvirtError:
            pass  # libvirtd is not running: nothing of ours can be either
        self.daemons.stop()
        self.nodes.clear()
        if self.drive_dir and self.drive_dir != self.workdir:
            shutil.rmtree(self.drive_dir, ignore_errors=True)  # memory, not a cache


def _define(conn: libvirt.virConnect, spec: VmSpec, kvm: bool) -> str:
    spec.workdir.mkdir(parents=True, exist_ok=True)
    for path, size in ((spec.disk, DISK_BYTES), (spec.nvme, NVME_BYTES)):
        path.unlink(missing_ok=True)
        with path.open("wb") as image:
            image.truncate(size)  # sparse: a fresh blank drive
    spec.nvram.unlink(missing_ok=True)
    spec.console_log.write_bytes(b"")
    conn.defineXML(domain_xml(spec, kvm=kvm))
    return spec.uuid


def _remove_domains(conn: libvirt.virConnect) -> None:
    for domain in conn.listAllDomains():
        if not domain.name().startswith(NAME_PREFIX):
            continue
        if domain.isActive():
            domain.destroy()
        # The TPM's state goes with the domain: each run's VMs are new machines with new EKs.
        domain.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_NVRAM | libvirt.VIR_DOMAIN_UNDEFINE_TPM)


def _memory_dir(workdir: Path) -> Path:
    """A tmpfs directory for the drives' backing files, one per workdir; the workdir without one."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        return workdir
    digest = hashlib.sha256(str(workdir).encode()).hexdigest()[:12]
    path = shm / f"greenlight-vm-tier-{digest}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path
