"""The command lines of the acceptance tools on a real node, and the kernel log the XID check reads."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from .tools import Capture

# Kernel log lines the gates judge: NVRM (Xids, GPUs named in words), NVSwitch SXids, PCIe AER.
# The first line of the log is kept too, as proof that the log was read (the parser refuses
# output with no kernel lines at all).
JUDGED_LINES = re.compile(r"NVRM|SXid|AER|PCIe Bus Error")
JOURNAL_NOTICES = ("-- No entries --", "-- Logs begin", "-- Journal begins", "-- Boot ")


class ToolParamsError(ValueError):
    """The runner's parameters do not say enough to run the tool."""


def nccl_command(p: dict) -> list[str]:
    """mpirun of all_reduce_perf across the hosts the runner chose (this node and its peers)."""
    hosts = [str(h) for h in p.get("hosts") or [] if str(h).strip()]
    if len(hosts) < 2:
        raise ToolParamsError(
            f"nccl: the runner named {len(hosts)} host(s) {hosts}; NCCL needs this node and at "
            "least one peer in params['hosts']"
        )
    rail = p.get("rail")
    per_host = 1 if rail is not None else int(p.get("gpus_per_host", 8))
    ranks = int(p.get("ranks") or per_host * len(hosts))
    return [
        "mpirun",
        "--host",
        ",".join(f"{h}:{per_host}" for h in hosts),
        "-np",
        str(ranks),
        # One rail: that rail's NIC and the GPU beside it, on both nodes.
        *(
            ["-x", f"NCCL_IB_HCA=mlx5_{rail}", "-x", f"CUDA_VISIBLE_DEVICES={rail}"]
            if rail is not None
            else []
        ),
        "all_reduce_perf",
        "-b",
        "8",
        "-e",
        str(p.get("max_bytes", "16G")),
        "-f",
        "2",
        "-g",
        "1",
    ]


# ib_write_bw between two nodes on one rail: the peer (MPI rank 1) serves, this node (rank 0)
# connects to it. One large message size, for long enough to reach the plateau.
PERFTEST_SIZE = 8 * 1024 * 1024
PERFTEST_SECONDS = 10


def perftest_command(p: dict) -> list[str]:
    """mpirun of ib_write_bw across this node and its peer on one rail (a node without NCCL)."""
    hosts = [str(h) for h in p.get("hosts") or [] if str(h).strip()]
    if len(hosts) != 2 or p.get("rail") is None:
        raise ToolParamsError(
            f"perftest: the runner must name this node and one peer in params['hosts'] "
            f"(got {hosts}) and the rail (got {p.get('rail')!r})"
        )
    bw = (
        f"ib_write_bw -d mlx5_{int(p['rail'])} -F --report_gbits -s {PERFTEST_SIZE} "
        f"-D {int(p.get('seconds', PERFTEST_SECONDS))}"
    )
    # The client waits a moment for the server to listen; perftest retries nothing itself.
    script = (
        f'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec {bw}; '
        f"else sleep 2; exec {bw} {shlex.quote(hosts[1])}; fi"
    )
    return ["mpirun", "--tag-output", "--host", f"{hosts[0]}:1,{hosts[1]}:1", "-np", "2",
            "sh", "-c", script]  # fmt: skip


def fio_command(
    drives: list[tuple[str, bool]], runtime_s: int = 60, iodepth: int = 32
) -> list[str]:
    """One sequential read job per drive, then one write job per writable drive.

    Every job names its own --filename (fio's JSON reports a job's options, not the global
    ones, and the parser attributes each job to a drive by it). The reads of all drives run
    together, then the writes together.
    """
    if not drives:
        raise ToolParamsError("fio: no drives to test")
    cmd = [
        "fio",
        "--output-format=json",
        "--direct=1",
        "--ioengine=libaio",
        f"--iodepth={int(iodepth)}",
        "--bs=1M",
        f"--runtime={int(runtime_s)}",
        "--time_based",
    ]
    for path, _ in drives:
        cmd += [f"--name=read-{Path(path).name}", f"--filename={path}", "--rw=read"]
    first_write = True
    for path, writable in drives:
        if not writable:
            continue
        cmd += [f"--name=write-{Path(path).name}", f"--filename={path}", "--rw=write"]
        if first_write:
            cmd.append("--stonewall")
            first_write = False
    return cmd


def mndiag_command(p: dict) -> list[str]:
    """dcgmi mndiag (DCGM 4.3+) from this node's host engine over the hosts the rack gate named,
    this node among them; `--hostList` takes them separated by semicolons."""
    hosts = [str(h).strip() for h in p.get("hosts") or [] if str(h).strip()]
    if not hosts or any(";" in h for h in hosts):
        raise ToolParamsError(f"mndiag: params['hosts'] must name the hosts to test, got {hosts}")
    return ["dcgmi", "mndiag", "--hostList", ";".join(hosts), "--json"]


SIMPLE_COMMANDS: dict[str, Callable[[dict], list[str]]] = {
    "dcgm": lambda p: ["dcgmi", "diag", "-r", str(p.get("level", 3)), "-j"],
    "nccl": nccl_command,
    "perftest": perftest_command,
    "nvbandwidth": lambda p: ["nvbandwidth"],
    "gpu-burn": lambda p: ["gpu_burn", "-d", str(int(p.get("duration_s", 600)))],
    "nvidia-smi": lambda p: ["nvidia-smi", "-q", "-x"],
    "imex": lambda p: ["nvidia-imex-ctl", "-N"],
    "nvlink": lambda p: ["nvidia-smi", "nvlink", "-s"],
    "host-addresses": lambda p: ["hostname", "-I"],
    "hostname": lambda p: ["hostname"],
    "mndiag": mndiag_command,
    # Greenlight's own workload, in the agent's interpreter (the node's image brings torch).
    "reference-job": lambda p: [
        sys.executable,
        str(Path(__file__).with_name("reference_job.py")),
        "--peak-tflops",
        str(p["peak_tflops"]),
        "--size",
        str(p.get("size", "standard")),
        "--steps",
        str(int(p.get("steps", 20))),
    ],
}


async def kernel_log(capture: Capture) -> tuple[int, str]:
    """This boot's kernel log, cut to its first line and the lines the gates judge.

    journald's copy first (it outlives a wrapped ring buffer); where journald keeps none (the
    ephemeral image runs no journald) it says "-- No entries --", which is no log at all, and
    the kernel's ring buffer is read with dmesg. A clean node gives its first line and no Xid:
    a clean log, not an error.
    """
    reasons = []
    for cmd in (
        ["journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"],
        ["dmesg"],
    ):
        done = await capture(cmd)
        lines = [
            line
            for line in done.stdout.splitlines()
            if line.strip() and not line.startswith(JOURNAL_NOTICES)
        ]
        if done.code == 0 and lines:
            kept = (line for line in lines[1:] if JUDGED_LINES.search(line))
            return 0, "\n".join([lines[0], *kept])
        reasons.append(f"{cmd[0]} exited {done.code}: {(done.stderr or done.stdout).strip()[:200]}")
    return 1, "no kernel log could be read: " + "; ".join(reasons)
