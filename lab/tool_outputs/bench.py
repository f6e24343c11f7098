"""Bandwidth tools in their real formats: nccl-tests all_reduce_perf, nvbandwidth, fio JSON."""

from __future__ import annotations

import json

from .node import Fault, SimNode, component_index, faults_named

NCCL_SIZES = [8 * 2**k for k in range(31)]  # -b 8 -e 8G -f 2
SLOW_NIC_FACTOR = 0.60
FIO_READ_MBPS = 6900.0
FIO_WRITE_MBPS = 4100.0


def nccl_all_reduce(
    pair: tuple[SimNode, SimNode],
    faults: dict[str, Fault | list[Fault]] | None = None,
    rail: int | None = None,
    tests_version: str = "2.13.10",
    nccl_library: int = 22105,
) -> str:
    """all_reduce_perf across two nodes (8 ranks each); faults maps node_id -> that node's faults.

    With rail=None all NICs carry traffic and the reference is every NIC's line rate together; with
    rail=k only NIC k of each node does (NCCL_IB_HCA=mlx5_k) and the reference is one NIC.
    """
    a, b = pair
    nics = 1 if rail is not None else len(a.nic_names)
    line_rate_gbytes = nics * a.nic_line_rate_gbps / 8
    rng = pair[0].rng(f"nccl:{a.node_id}:{b.node_id}:{rail}")
    efficiency = rng.uniform(0.955, 0.975)
    for node in pair:
        for fault in faults_named((faults or {}).get(node.node_id), "slow_nic"):
            if rail is None or component_index(fault, "NIC") == rail:
                # A ring runs at the pace of its slowest link.
                efficiency = min(efficiency, SLOW_NIC_FACTOR * rng.uniform(0.98, 1.02))
    ranks = 8 * 2
    bus_factor = 2 * (ranks - 1) / ranks
    peak_algbw = line_rate_gbytes * efficiency / bus_factor
    lines = [
        f"# nccl-tests version {tests_version} nccl-headers={nccl_library} nccl-library={nccl_library}",
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for r in range(ranks):
        node = pair[r // 8]
        gpu = r % 8
        lines.append(
            f"#  Rank {r:2d} Group  0 Pid {40000 + r * 7:6d} on {node.node_id:>10} device {gpu:2d} "
            f"[{node.gpu_bus_ids[gpu][:-2]}] {node.gpu_model}"
        )
    lines += [
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
    ]
    busbws = []
    for size in NCCL_SIZES:
        cells = []
        for _ in range(2):
            latency_us = rng.uniform(30.0, 48.0)
            time_us = latency_us + size / (peak_algbw * 1e3) * rng.uniform(0.995, 1.01)
            algbw = size / (time_us * 1e3)
            busbw = algbw * bus_factor
            cells.append((time_us, algbw, busbw))
        busbws.append(cells[0][2])
        lines.append(
            f"{size:12d}  {size // 4:12d}     float     sum      -1"
            + "".join(f"  {_t(t)}  {al:6.2f}  {bu:6.2f}       0" for t, al, bu in cells)
        )
    lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {sum(busbws) / len(busbws):.4f} ",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "",
    ]
    return "\n".join(lines)


def _t(time_us: float) -> str:
    # nccl-tests prints 7 significant characters: 38.46, 1162.2, 63896.
    if time_us < 1000:
        return f"{time_us:7.2f}"
    if time_us < 10000:
        return f"{time_us:7.1f}"
    return f"{time_us:7.0f}"


D2D_TESTCASES = {
    "device_to_device_memcpy_read_ce": "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
    "device_to_device_memcpy_write_ce": "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)",
}


def nvbandwidth_text(
    node: SimNode, faults: Fault | list[Fault] | None = None, version: str = "v0.7"
) -> str:
    """nvbandwidth's text output for host-to-device and the device-to-device CE testcases.

    A nvswitch_topology fault with component "GPU n" lowers every pair with GPU n (links trained
    down); with component "NVSwitch k" it lowers every pair (one switch of four missing).
    """
    rng = node.rng("nvbandwidth")
    n = node.gpu_count
    weak_gpus: set[int] = set()
    switch_factor = 1.0
    for fault in faults_named(faults, "nvswitch_topology"):
        if str(fault.get("component", "")).lower().startswith("nvswitch"):
            switch_factor = 0.70
        else:
            weak_gpus.add(component_index(fault, "GPU"))
    lines = [
        f"nvbandwidth Version: {version}",
        f"Built from Git version: {version}",
        "",
        "CUDA Runtime Version: 12040",
        "CUDA Driver Version: 12040",
        f"Driver Version: {node.driver_version}",
        "",
    ]
    for i in range(n):
        bus = node.gpu_bus_ids[i].replace("0000:", "00000000:", 1)[:-2]
        lines.append(f"Device {i}: {node.gpu_model} ({bus})")
    lines.append("")
    h2d = [rng.uniform(54.8, 55.6) for _ in range(n)]
    lines += [
        "Running host_to_device_memcpy_ce.",
        "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
    ]
    lines += [_header(n), " 0" + "".join(f"{v:10.2f}" for v in h2d), ""]
    lines += [f"SUM host_to_device_memcpy_ce {sum(h2d):.2f}", ""]
    for name, description in D2D_TESTCASES.items():
        lines += [f"Running {name}.", description, _header(n)]
        total = 0.0
        for row in range(n):
            cells = []
            for col in range(n):
                if row == col:
                    cells.append(f"{'N/A':>10}")
                    continue
                value = node.nvlink_bandwidth_gbps * rng.uniform(0.872, 0.885) * switch_factor
                if row in weak_gpus or col in weak_gpus:
                    value *= 0.38
                total += value
                cells.append(f"{value:10.2f}")
            lines.append(f"{row:2d}" + "".join(cells))
        lines += ["", f"SUM {name} {total:.2f}", ""]
    return "\n".join(lines)


def _header(n: int) -> str:
    return "  " + "".join(f"{i:10d}" for i in range(n))


def fio_json(
    node: SimNode, faults: Fault | list[Fault] | None = None, version: str = "3.36"
) -> str:
    """`fio --output-format=json` for a sequential read then write job on every drive."""
    rng = node.rng("fio")
    bad = {component_index(f, "nvme") for f in faults_named(faults, "nvme_errors")}
    jobs = []
    for i in range(len(node.drive_serials)):
        device = f"/dev/nvme{i}n1"
        for rw, mbps in (("read", FIO_READ_MBPS), ("write", FIO_WRITE_MBPS)):
            actual = mbps * rng.uniform(0.97, 1.02) * (0.12 if i in bad else 1.0)
            jobs.append(_fio_job(f"seq{rw}-nvme{i}n1", device, rw, actual, i in bad, rng))
    return json.dumps(
        {
            "fio version": f"fio-{version}",
            "timestamp": 1717492364,
            "timestamp_ms": 1717492364112,
            "time": "Tue Jun  4 09:12:44 2024",
            "global options": {
                "ioengine": "libaio",
                "direct": "1",
                "runtime": "60",
                "time_based": "1",
            },
            "jobs": jobs,
            "disk_util": [
                {
                    "name": f"nvme{i}n1",
                    "read_ios": 421337,
                    "write_ios": 250112,
                    "in_queue": 0,
                    "util": round(rng.uniform(98.5, 99.9), 6),
                }
                for i in range(len(node.drive_serials))
            ],
        },
        indent=2,
    )


def _fio_job(name: str, filename: str, rw: str, mbps: float, error: bool, rng) -> dict:
    bw_kib = int(mbps * 1000 * 1000 / 1024)
    active = {
        "io_bytes": bw_kib * 1024 * 60,
        "io_kbytes": bw_kib * 60,
        "bw_bytes": bw_kib * 1024,
        "bw": bw_kib,
        "iops": bw_kib / 1024,
        "runtime": 60001,
        "total_ios": bw_kib * 60 // 1024,
        "lat_ns": {"min": 151232, "max": 9912312, "mean": 4.61e6 * rng.uniform(0.95, 1.05)},
    }
    idle = {
        "io_bytes": 0,
        "io_kbytes": 0,
        "bw_bytes": 0,
        "bw": 0,
        "iops": 0.0,
        "runtime": 0,
        "total_ios": 0,
        "lat_ns": {"min": 0, "max": 0, "mean": 0.0},
    }
    return {
        "jobname": name,
        "groupid": 0,
        "error": 5 if error else 0,
        "eta": 0,
        "elapsed": 61,
        "job options": {"name": name, "filename": filename, "rw": rw, "bs": "1M", "iodepth": "32"},
        "read": active if rw == "read" else idle,
        "write": active if rw == "write" else idle,
    }
