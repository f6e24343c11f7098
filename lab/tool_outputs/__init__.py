"""Deterministic generators of the acceptance tools' real output formats for simulated nodes.

Free of Django, and never imported by fleet, provisioning or acceptance (the lab is a peer).
"""

from .bench import fio_json, nccl_all_reduce, nvbandwidth_text
from .gpu import dcgm_diag_json, gpu_burn_text, kernel_log_xid, nvidia_smi_xml, soak_samples
from .node import FAULT_NAMES, SimNode, make_node
from .reference_job import reference_job_text

__all__ = [
    "FAULT_NAMES",
    "SimNode",
    "dcgm_diag_json",
    "fio_json",
    "gpu_burn_text",
    "kernel_log_xid",
    "make_node",
    "nccl_all_reduce",
    "nvbandwidth_text",
    "nvidia_smi_xml",
    "reference_job_text",
    "soak_samples",
]
