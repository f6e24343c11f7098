"""What a GB200 compute tray's tools print of its NVLink domain, in the tools' real formats.

- `nvidia-smi -q -x`: each <gpu> gains its <fabric> element as driver 580 writes it (the
  element names and order of Greenlight's own 580.159.04 capture, greenlight_h100_nvidia_smi_q_x_
  580.159.04_under_load.xml, whose H100 says N/A throughout).
- `nvidia-imex-ctl -N`: the layout of AWS ParallelCluster's 18-node p6e-gb200 capture
  (imex_N_570.172_aws_pcluster_p6e_gb200_18_nodes_ready.txt): legend, time stamp, one row per
  node, the connectivity table and the domain state.
- `nvidia-smi nvlink -s`: the layout of the GB200 paste in NVIDIA/k8s-test-infra#371 (18 links
  at 53.125 GB/s per GPU), a down link printed `<inactive>` as the V100 capture of
  azhpcdiag#73 prints it.
- `hostname -I`: the host's addresses, space separated, with the trailing space it prints.

Free of Django and of the rest of the lab: facts in, text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

IMEX_VERSION = "570.172"
IMEX_STAMP = "5/12/2025 06:08:10.580"
LINK_GBPS = "53.125"
IMEX_LEGEND = (
    "Connectivity Table Legend:\n"
    "I - Invalid - Node wasn't reachable, no connection status available\n"
    "N - Never Connected\n"
    "R - Recovering - Connection was lost, but clean up has not yet been triggered.\n"
    "D - Disconnected - Connection was lost, and clean up has been triggreed.\n"
    "A - Authenticating - If GSSAPI enabled, client has initiated mutual authentication.\n"
    "!V! - Version mismatch, communication disabled.\n"
    "!M! - Node map mismatch, communication disabled.\n"
    "C - Connected - Ready for operation\n"
)
HEALTHY = (
    ("summary", "Healthy"),
    ("bandwidth", "Full"),
    ("route_recovery_in_progress", "False"),
    ("route_unhealthy", "False"),
    ("access_timeout_recovery", "False"),
    ("incorrect_configuration", "None"),
    ("partition_assigned", "N/A"),
)


@dataclass(frozen=True)
class GpuFabric:
    """One GPU's fabric facts as NVML reports them."""

    state: str = "Completed"
    status: str = "Success"
    clique_id: int | None = None
    cluster_uuid: str = ""


def with_fabric(xml: str, fabrics: Sequence[GpuFabric]) -> str:
    """`nvidia-smi -q -x` output with each GPU's <fabric> element, in GPU order."""
    parts = xml.split("\t</gpu>\n")
    if len(parts) - 1 != len(fabrics):
        raise ValueError(f"{len(parts) - 1} GPUs in the report, {len(fabrics)} fabrics given")
    out = [part + _fabric_xml(fabric) for part, fabric in zip(parts, fabrics, strict=False)]
    return "\t</gpu>\n".join(out + parts[len(fabrics) :])


def _fabric_xml(fabric: GpuFabric) -> str:
    clique = "N/A" if fabric.clique_id is None else str(fabric.clique_id)
    health = "".join(f"\t\t\t\t<{tag}>{value}</{tag}>\n" for tag, value in HEALTHY)
    return (
        "\t\t<fabric>\n"
        f"\t\t\t<state>{fabric.state}</state>\n"
        f"\t\t\t<status>{fabric.status}</status>\n"
        f"\t\t\t<cliqueId>{clique}</cliqueId>\n"
        f"\t\t\t<clusterUuid>{fabric.cluster_uuid or 'N/A'}</clusterUuid>\n"
        f"\t\t\t<health>\n{health}\t\t\t</health>\n"
        "\t\t</fabric>\n"
    )


def imex_nodes(addresses: Sequence[str]) -> str:
    """`nvidia-imex-ctl -N` of a domain whose nodes_config.cfg lists `addresses`, in order,
    every node READY and every pair Connected (a tray left out of the file is not listed)."""
    lines = [IMEX_LEGEND, IMEX_STAMP, "Nodes:"]
    for index, address in enumerate(addresses):
        lines.append(f"Node #{index:<3} - {address:<15} - {'READY':<20} - Version: {IMEX_VERSION}")
    lines.append("")
    header = "".join(f"{j:<4}" for j in range(len(addresses))).rstrip()
    lines.append(f" Nodes From\\To  {header}")
    for i in range(len(addresses)):
        lines.append(f"{i:>8}        " + "   ".join("C" * len(addresses)))
    lines += ["", "Domain State: UP"]
    return "\n".join(lines) + "\n"


def nvlink_status(
    gpus: Sequence[tuple[str, str]], links: int, down: set[tuple[int, int]] = frozenset()
) -> str:
    """`nvidia-smi nvlink -s` for GPUs given as (model, UUID), each with `links` links; a
    (GPU, link) in `down` is inactive."""
    lines = []
    for index, (model, uuid) in enumerate(gpus):
        lines.append(f"GPU {index}: {model} (UUID: {uuid})")
        for link in range(links):
            speed = "<inactive>" if (index, link) in down else f"{LINK_GBPS} GB/s"
            lines.append(f"         Link {link}: {speed}")
    return "\n".join(lines) + "\n"


def host_addresses(addresses: Sequence[str]) -> str:
    """`hostname -I`: every address of the host, each followed by a space."""
    return "".join(f"{address} " for address in addresses) + "\n"
