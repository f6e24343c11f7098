"""One pure parser per tool; PARSERS maps the tool's command name to its parse function."""

from __future__ import annotations

from collections.abc import Callable

from . import (
    aer,
    dcgm,
    fio,
    gpu_burn,
    imex,
    mndiag,
    nccl,
    nvbandwidth,
    nvidia_smi,
    nvlink,
    perftest,
    reference_job,
    sxid,
    xid,
)
from .base import Finding, ParseResult, Severity

PARSERS: dict[str, Callable[[str], ParseResult]] = {
    "dcgm": dcgm.parse,
    "nccl": nccl.parse,
    "nvbandwidth": nvbandwidth.parse,
    "fio": fio.parse,
    "gpu-burn": gpu_burn.parse,
    "nvidia-smi": nvidia_smi.parse,
    "xid": xid.parse,
    "sxid": sxid.parse,
    "aer": aer.parse,
    "perftest": perftest.parse,
    "reference-job": reference_job.parse,
    "nvlink": nvlink.parse,
    "imex": imex.parse,
    "mndiag": mndiag.parse,
}

__all__ = ["PARSERS", "Finding", "ParseResult", "Severity"]
