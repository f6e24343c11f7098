"""One VM of the tier: what makes it a node (serial, MACs, NVMe serial) and its libvirt XML."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
MEMORY_MIB = 1536  # the initramfs is unpacked into memory; 768 MiB fails while unpacking
NAME_PREFIX = "glvm-"
PRODUCT = "Greenlight VM"


@dataclass(frozen=True)
class VmSpec:
    """A VM as Greenlight's inventory will see it."""

    index: int
    workdir: Path
    # Where the NVMe's backing file lives: memory (tmpfs) where there is one. On a shared host
    # disk, fio's minute of direct writes stalled the guest's NVMe past its 30 s I/O timeout
    # (seen: aborts, a controller reset, a read job at 0.3 MB/s).
    drive_dir: Path | None = None
    # A TPM 2.0 (swtpm, which libvirt runs): OVMF measures the boot into it, as a server's
    # firmware measures into its discrete or firmware TPM.
    tpm: bool = False

    @property
    def name(self) -> str:
        return f"{NAME_PREFIX}{self.index:02d}"

    @property
    def uuid(self) -> str:
        """Stable across runs: the BMC reports it, and Greenlight knows the node by it."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"greenlight-vm-tier/{self.name}"))

    @property
    def serial(self) -> str:
        """The SMBIOS serial the guest's dmidecode reads: the identity its BMC gives the node.

        sushy-tools reports no system serial, so Greenlight knows these nodes by their system
        UUID ("uuid-<UUID>", see provisioning.intake.enrollment); a real server's BMC and SMBIOS agree
        on its serial, and so do these.
        """
        return f"uuid-{self.uuid}"

    @property
    def macs(self) -> tuple[str, str]:
        return (f"52:54:00:47:{self.index:02x}:01", f"52:54:00:47:{self.index:02x}:02")

    @property
    def nvme_serial(self) -> str:
        return f"GLNVME{self.index:04d}"

    @property
    def disk(self) -> Path:
        return self.workdir / f"{self.name}-disk.img"

    @property
    def nvme(self) -> Path:
        return (self.drive_dir or self.workdir) / f"{self.name}-nvme.img"

    @property
    def nvram(self) -> Path:
        return self.workdir / f"{self.name}-VARS.fd"

    @property
    def console_log(self) -> Path:
        return self.workdir / f"{self.name}-console.log"


def domain_xml(spec: VmSpec, *, kvm: bool) -> str:
    """The libvirt domain: UEFI q35, 1 vCPU, two user-mode NICs, a SATA disk, an NVMe, a serial
    log, and a TPM 2.0 where the spec has one."""
    q = quoteattr
    tpm = "<tpm model='tpm-crb'><backend type='emulator' version='2.0'/></tpm>" if spec.tpm else ""
    first, second = spec.macs
    # libvirt 9.0 has no NVMe disk type: QEMU's own arguments add it, at a fixed free PCI address
    # (without one it collides with the VGA device and the domain does not start).
    nvme_drive = f"file={spec.nvme},if=none,id=nvm0,format=raw"
    nvme_device = f"nvme,serial={spec.nvme_serial},drive=nvm0,addr=0x10"
    return f"""<domain type='{"kvm" if kvm else "qemu"}' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{spec.name}</name>
  <uuid>{spec.uuid}</uuid>
  <memory unit='MiB'>{MEMORY_MIB}</memory>
  <vcpu>1</vcpu>
  <sysinfo type='smbios'>
    <system>
      <entry name='manufacturer'>QEMU</entry>
      <entry name='product'>{PRODUCT}</entry>
      <entry name='serial'>{spec.serial}</entry>
    </system>
  </sysinfo>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <loader readonly='yes' type='pflash'>{OVMF_CODE}</loader>
    <nvram template={q(OVMF_VARS)}>{spec.nvram}</nvram>
    <boot dev='hd'/>
    <smbios mode='sysinfo'/>
  </os>
  <features><acpi/><apic/></features>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file={q(str(spec.disk))}/>
      <target dev='sda' bus='sata'/>
    </disk>
    <interface type='user'>
      <mac address='{first}'/>
      <model type='virtio'/>
    </interface>
    <interface type='user'>
      <mac address='{second}'/>
      <ip family='ipv4' address='10.0.3.0' prefix='24'/>
      <model type='virtio'/>
    </interface>
    <serial type='file'>
      <source path={q(str(spec.console_log))} append='on'/>
      <target port='0'/>
    </serial>
    {tpm}
  </devices>
  <qemu:commandline>
    <qemu:arg value='-drive'/>
    <qemu:arg value={q(nvme_drive)}/>
    <qemu:arg value='-device'/>
    <qemu:arg value={q(nvme_device)}/>
  </qemu:commandline>
</domain>
"""
