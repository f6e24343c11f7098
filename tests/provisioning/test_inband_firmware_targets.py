"""The in-band firmware phases judge each device against its own model's target."""

from __future__ import annotations

from provisioning.core import firmware_targets
from provisioning.core.phases import PHASES_BY_NAME
from provisioning.core.phases.base import PhaseContext

SHA = "a" * 64
NVME = {
    "version": "11170200",
    "url": "https://artifacts/wdc.bin",
    "sha256": SHA,
    "model": "SN730",
    "models": {
        "SBFPF2BU153T": {"version": "7CV10200", "url": "https://artifacts/solidigm.bin",
                         "sha256": SHA},
    },
}  # fmt: skip
DRIVES = [
    {"name": "/dev/nvme0n1", "model": "WDC PC SN730 SDBQNTY-256G-1001", "firmware": "11170101"},
    {"name": "/dev/nvme1n1", "model": "SOLIDIGM SBFPF2BU153T", "firmware": "7CV10200"},
    {"name": "/dev/nvme2n1", "model": "MTFDHBA512TCK", "firmware": "P1FB007"},
]


def context(block: dict) -> PhaseContext:
    # diff reads only the manifest: no run, node or record is needed to judge a device.
    return PhaseContext(run=None, node=None, record=None, manifest={"firmware": {"nvme": block}})  # type: ignore[arg-type]


def test_each_drive_is_compared_with_its_models_version_and_uncovered_ones_are_left_out():
    drifts = PHASES_BY_NAME["nvme_firmware"].diff(context(NVME), DRIVES)
    assert [(d.component, d.expected, d.actual, d.matched) for d in drifts] == [
        ("/dev/nvme0n1", "11170200", "11170101", False),
        ("/dev/nvme1n1", "7CV10200", "7CV10200", True),
    ]


def test_the_agent_gets_every_target_per_model_ones_first():
    assert firmware_targets.for_agent("nvme", NVME) == [
        {"model": "SBFPF2BU153T", "version": "7CV10200",
         "url": "https://artifacts/solidigm.bin", "sha256": SHA},
        {"model": "SN730", "version": "11170200", "url": "https://artifacts/wdc.bin",
         "sha256": SHA},
    ]  # fmt: skip
    assert firmware_targets.for_agent("nvme", None) == []


def test_a_target_without_a_model_covers_every_drive():
    block = {k: v for k, v in NVME.items() if k not in ("model", "models")}
    drifts = PHASES_BY_NAME["nvme_firmware"].diff(context(block), DRIVES)
    assert [d.expected for d in drifts] == ["11170200"] * 3
