"""The list of acceptance gates, in their default (cheapest first) order. The one place."""

from __future__ import annotations

from dataclasses import dataclass

from .choices import GateName


@dataclass(frozen=True)
class GateSpec:
    name: GateName
    tools: tuple[str, ...]
    multi_node: bool
    # Threshold names a profile may set for this gate, with a one-line meaning each.
    thresholds: dict[str, str]


GATES: tuple[GateSpec, ...] = (
    GateSpec(
        GateName.ATTESTATION,
        ("attestation",),
        False,
        {
            "require_signature": "the booted image's signature must verify (1 = yes)",
            "require_tpm": "a node must attest with a TPM quote (1 = yes, 0 = a node without "
            "one passes with a 'not attested' finding); unset: yes where the manifest pins "
            "golden measurements",
        },
    ),
    GateSpec(
        GateName.GPU_HEALTH,
        ("dcgm", "nvidia-smi", "xid"),
        False,
        {
            "dcgm_level": "dcgmi diag run level (1-4)",
            "max_uncorrectable_ecc": "uncorrectable ECC errors allowed per GPU",
            "max_pending_row_remaps": "pending row remaps allowed per GPU",
        },
    ),
    GateSpec(
        GateName.NVBANDWIDTH,
        ("nvbandwidth",),
        False,
        {"min_fraction_of_spec": "measured GPU-to-GPU bandwidth over the SKU's NVLink spec"},
    ),
    GateSpec(
        GateName.FABRIC,
        ("nccl",),
        True,
        {
            "min_busbw_fraction": "plateau all_reduce bus bandwidth over the SKU's line rate",
            "min_rail_fraction": "ib_write_bw average at the largest message over one NIC's rate",
            "lone_node_skips": "a node with no healthy partner in its rack: 1 = skip the gate, "
            "0 = stop the run for a person",
        },
    ),
    GateSpec(
        GateName.STORAGE,
        ("fio",),
        False,
        {
            "min_read_mbps": "sequential read throughput SLA, MB/s",
            "min_write_mbps": "sequential write throughput SLA, MB/s",
            "fio_runtime_s": "seconds fio reads, then writes, each drive",
        },
    ),
    GateSpec(
        GateName.REFERENCE_JOB,
        ("reference-job",),
        False,
        {
            "min_mfu": "lowest model FLOPs utilisation allowed on any GPU (0-1)",
            "peak_tflops": "the SKU's dense bf16 peak per GPU, TFLOP/s (the MFU's denominator)",
            "steps": "training steps the reference job times on each GPU",
        },
    ),
    GateSpec(
        GateName.BURN_IN,
        ("gpu-burn", "nvidia-smi", "xid"),
        False,
        {
            "soak_hours": "length of the soak, hours",
            "max_gpu_temp_c": "highest GPU temperature allowed, Celsius",
            "sample_interval_s": "telemetry sampling interval, seconds",
        },
    ),
)

GATES_BY_NAME: dict[str, GateSpec] = {str(g.name): g for g in GATES}
