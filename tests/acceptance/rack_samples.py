"""An NVL72 rack's compute-tray reports, built from real captures (no real GB200 `-q` is public).

What is real and what is changed, per tool:
- `nvidia-smi -q`: Greenlight's own H100 capture on driver 580.159.04 (a 580 report, the Fabric
  section with every health row). Its one GPU block is repeated four times per tray with GB200
  bus ids (00000008/9:01:00.0, 00000018/9:01:00.0), minor numbers, serials and UUIDs changed, and
  its Fabric rows set to what real GB200 trays reported in public threads: State Completed,
  Status Success, clique 4026 of cluster 9c6f5af3-... (leptonai/gpud#1106, an NVML read) and a
  healthy health block (Summary Healthy, Bandwidth Full as in kubernetes-sigs/dra-driver-nvidia-gpu
  #626; the route rows False, Incorrect Configuration None).
- `nvidia-imex-ctl -N`: the real 18-node p6e-gb200 domain of AWS's ParallelCluster guide, every
  tray reporting that same view; tray k is the guide's Node #k.
- `nvidia-smi nvlink -s`: GPU 0 of the real GB200 paste in NVIDIA/k8s-test-infra#371 (18 links
  at 53.125 GB/s), one per GPU with that GPU's UUID.
"""

from __future__ import annotations

import re

from acceptance.rack_fabric import TrayReport

from .sample_files import read

SMI = "real/greenlight_h100_nvidia_smi_q_580.159.04_p0_idle.txt"
IMEX = "real/imex_N_570.172_aws_pcluster_p6e_gb200_18_nodes_ready.txt"
NVLINK = "real/nvlink_smi_s_k8stestinfra371_gb200_elided.txt"
BUS_IDS = ("00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0")
CLUSTER = "9c6f5af3-53bf-49b5-a436-b66766c413c3"
CLIQUE = 4026
HEALTHY = {
    "Summary": "Healthy",
    "Bandwidth": "Full",
    "Route Recovery in progress": "False",
    "Route Unhealthy": "False",
    "Access Timeout Recovery": "False",
    "Incorrect Configuration": "None",
}
TRAYS = [f"c{n:02d}" for n in range(1, 19)]


def imex_addresses() -> list[str]:
    """The IMEX node addresses of the real 18-node domain, in node order."""
    return re.findall(r"^Node #\d+\s+-\s+(\S+)", read(IMEX), re.MULTILINE)


def gpu_serial(tray: int, gpu: int) -> str:
    return f"16503250{tray:03d}{gpu:02d}"


def gpu_uuid(tray: int, gpu: int) -> str:
    return f"GPU-{tray:08x}-{gpu:04x}-4b3a-b971-f8fb582a0fb2"


def smi_report(
    tray: int, fabric: dict[int, dict[str, str | None]] | None = None, without: int | None = None
) -> str:
    """Tray `tray`'s `nvidia-smi -q`: four GPU blocks; `fabric` overrides rows per GPU index, and
    GPU `without` has no Fabric section at all."""
    text = read(SMI)
    head, block = text.split("GPU 00000000:00:06.0\n", 1)
    head = re.sub(r"(Attached GPUs\s+: )1", r"\g<1>4", head)
    blocks = []
    for index, bus in enumerate(BUS_IDS):
        rows = {"State": "Completed", "Status": "Success", "CliqueId": str(CLIQUE),
                "ClusterUUID": CLUSTER, **HEALTHY, **(fabric or {}).get(index, {})}  # fmt: skip
        gpu = block.replace("00000000:00:06.0", bus)
        gpu = re.sub(r"(Serial Number\s+: )1752524018811", rf"\g<1>{gpu_serial(tray, index)}", gpu)
        gpu = re.sub(r"(GPU UUID\s+: )\S+", rf"\g<1>{gpu_uuid(tray, index)}", gpu)
        gpu = re.sub(r"(Minor Number\s+: )0", rf"\g<1>{index}", gpu)
        gpu = _fabric(gpu, rows)
        if index == without:
            gpu = gpu[: gpu.index("    Fabric\n")] + gpu[gpu.index("    Processes") :]
        blocks.append(f"GPU {bus}\n" + gpu)
    return head + "\n".join(b.rstrip("\n") + "\n" for b in blocks)


def _fabric(block: str, rows: dict[str, str | None]) -> str:
    """The block with its Fabric section's rows set (a row set to None is taken out)."""
    start = block.index("    Fabric\n")
    end = block.index("    Processes")
    section = block[start:end]
    for key, value in rows.items():
        pattern = rf"^(\s+{re.escape(key)}\s+: ).*$"
        if value is None:
            section = re.sub(pattern + r"\n", "", section, flags=re.MULTILINE)
        else:
            section = re.sub(
                pattern, lambda m, v=value: m.group(1) + v, section, flags=re.MULTILINE
            )
    return block[:start] + section + block[end:]


def nvlink_report(tray: int, links: dict[tuple[int, int], str] | None = None) -> str:
    """Tray `tray`'s `nvidia-smi nvlink -s`; `links` overrides (gpu, link) -> speed text."""
    real = read(NVLINK).splitlines()
    speeds = real[1:19]
    out = []
    for gpu in range(len(BUS_IDS)):
        out.append(f"GPU {gpu}: NVIDIA GB200 (UUID: {gpu_uuid(tray, gpu)})")
        for number, line in enumerate(speeds):
            speed = (links or {}).get((gpu, number))
            out.append(line if speed is None else f"         Link {number}: {speed}")
    return "\n".join(out) + "\n"


def imex_report(text: str | None = None) -> str:
    return text if text is not None else read(IMEX)


def rack(overrides: dict[str, dict[str, str | None]] | None = None) -> list[TrayReport]:
    """The 18 trays' reports, each tray's outputs replaced by `overrides[tray]` (None: absent)."""
    addresses = imex_addresses()
    trays = []
    for number, name in enumerate(TRAYS):
        outputs: dict[str, str | None] = {
            "nvidia-smi": smi_report(number),
            "imex": imex_report(),
            "nvlink": nvlink_report(number),
            **(overrides or {}).get(name, {}),
        }
        present = {tool: text for tool, text in outputs.items() if text is not None}
        trays.append(TrayReport.from_outputs(name, present, f"1820025180{number:03d}",
                                             addresses[number]))  # fmt: skip
    return trays
