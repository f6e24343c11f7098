"""The VM tier's SKU, golden manifest and acceptance profile, put into Greenlight as an operator would."""

from __future__ import annotations

import yaml

from acceptance.models import AcceptanceProfile
from fleet.models import Manifest, Sku

from ..enrollment import publish

SKU_NAME = "vm-qemu"
OS_DISK = "/dev/sda"
# What the emulated storage does under software emulation (VM-NODES.md: fio 4k random reads at
# 8-10k IOPS); the bar proves the gate judges real fio output, not that QEMU is fast.
# fio reads then writes for fio_runtime_s each: 60 s each put two minutes of every pass, in
# which nothing but the bar is learnt, on the CI's two shared cores. One I/O in flight: QEMU 7.2's
# emulated NVMe lost queued commands under fio's default 32 (I/O timeouts, aborts, resets, fio
# never finishing; seen in CI with both interrupt kinds), and the tier proves the gate reads
# real fio output, not that the emulated drive queues well.
# Two seconds each way keeps the emulated drive's exposure small; the bar is low enough that one
# stalled I/O, aborted and retried after the controller reset, still passes it.
STORAGE_THRESHOLDS = {
    "min_read_mbps": 0.5,
    "min_write_mbps": 0.5,
    "fio_runtime_s": 2,
    "fio_iodepth": 1,
}


def vm_sku(drive_count: int = 1) -> Sku:
    sku, _ = Sku.objects.get_or_create(
        name=SKU_NAME,
        defaults={
            "description": "QEMU VM behind sushy-tools' libvirt driver (the VM tier)",
            "gpu_count": 0,
            "nic_count": 0,
            "nic_line_rate_gbps": 1,
            "dpu_count": 0,
            "drive_count": drive_count,
            "nvlink_bandwidth_gbps": 0,
        },
    )
    return sku


def profile_yaml(version: str) -> str:
    """Only the storage gate: a VM has no GPU or fabric to judge."""
    document = {
        "sku": SKU_NAME,
        "version": version,
        "description": "VM tier: the storage gate on the emulated NVMe",
        "gates": [{"gate": "storage", "thresholds": STORAGE_THRESHOLDS}],
    }
    return yaml.safe_dump(document, sort_keys=False)


def attestation_profile_yaml(version: str) -> str:
    """The attestation gate alone, a TPM required: the tier's measured-boot scenarios."""
    document = {
        "sku": SKU_NAME,
        "version": version,
        "description": "VM tier: a TPM 2.0 quote over the measured boot, a TPM required",
        "gates": [{"gate": "attestation", "thresholds": {"require_tpm": 1}}],
    }
    return yaml.safe_dump(document, sort_keys=False)


PROFILES = {"storage": profile_yaml, "attestation": attestation_profile_yaml}


def manifest_yaml(
    version: str, *, iso: dict[str, str], os_image: dict[str, str], profile: str
) -> str:
    """Boot by virtual media; no firmware to flash, no BIOS settings; the tier's OS image."""
    document = {
        "sku": SKU_NAME,
        "version": version,
        "description": "VM tier: boot the ephemeral image by VirtualMedia, erase, write the OS",
        "firmware": {},
        "bios_settings": {},
        "boot_order": ["Cd", "Hdd"],
        # The SATA disk: the BMC's "Hdd" boot override boots the disks libvirt knows, and the
        # NVMe is QEMU's own device (libvirt 9.0 has no NVMe disk), so it is the data drive.
        "os_image": {**os_image, "disk": OS_DISK},
        "ephemeral": {"boot": "virtual_media", "iso": iso},
        "acceptance_profile": profile,
    }
    return yaml.safe_dump(document, sort_keys=False)


def publish_vm_documents(
    *, iso: dict[str, str], os_image: dict[str, str], profile: str = "storage"
) -> Manifest:
    """The VM SKU's profile and manifest, published (reused when unchanged); returns the manifest.

    `iso` is {url, sha256}, `os_image` {url, sha256, signature}: the ISO's URL as Greenlight (on the host) fetches it,
    the OS image's as the node's agent (in the guest) does.
    """
    sku = vm_sku()
    published = publish(AcceptanceProfile, sku, PROFILES[profile])
    return publish(
        Manifest,
        sku,
        lambda v: manifest_yaml(v, iso=iso, os_image=os_image, profile=published.version),
    )


def publish_os_image(os_image: dict[str, str]) -> Manifest:
    """A new version of the VM SKU's manifest installing `os_image` ({url, sha256, signature});
    every other section as the current version has it (golden values pinned since, for one)."""
    sku = vm_sku()
    current = Manifest.current_for(sku)
    if current is None:
        raise ValueError(f"{sku.name} has no published manifest to change the OS image of")
    document = yaml.safe_load(current.yaml_text)
    document["os_image"] = {**os_image, "disk": OS_DISK}
    return publish(
        Manifest, sku, lambda v: yaml.safe_dump({**document, "version": v}, sort_keys=False)
    )
