"""Scale tiers: bring-up benchmark runs of several sizes side by side, and whether they stay linear.

Each tier is one `manage.py bench --nodes N` JSON. A size that scales linearly brings nodes to
awaiting_approval at the same rate per hour on the same machine (it is the machine's cores, not
the fleet, that bound it) and spends the same CPU a node; issue 32 asks both to stay within 20%
of the smallest tier. Tiers compare only at one speed and soak: a faster lab clock asks more of
the same cores, a longer soak holds nodes longer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# How far a larger tier may stray from the smallest and still count as linear.
LINEAR_WITHIN = 0.20

# A run whose processes (Greenlight's, the datastores', the lab's) kept the cores at least this
# busy over its makespan was bound by them; below it, by one node's own lab time. Session 30's
# 741 nodes at speed 4 kept two cores 20% busy and ended 1.044 times one node's time.
CORES_BOUND_SHARE = 0.75


class TiersRefused(ValueError):
    """The runs cannot be compared as tiers (what differs is in the message)."""


def _p99(run: dict[str, Any]) -> float | None:
    return (run.get("event_latency_ms") or {}).get("p99")


def cores_busy_share(run: dict[str, Any]) -> float | None:
    """How busy the run kept the machine's cores over its makespan: every process's CPU (the
    lab's and the datastores' too) against cores times the real makespan; None where the JSON
    lacks a figure."""
    with_datastores = run.get("cpu_s_per_node_with_datastores")
    lab = run.get("lab_cpu_s_per_node")
    wall_s = run.get("wall_s")
    cpus = (run.get("machine") or {}).get("cpus")
    if with_datastores is None or lab is None or not wall_s or not cpus:
        return None
    return round((with_datastores + lab) * run["nodes"] / (wall_s * cpus), 3)


def tier_row(run: dict[str, Any], source: str) -> dict[str, Any]:
    """One tier's figures, from its benchmark JSON."""
    throughput = run.get("throughput") or {}
    memory = run.get("memory") or {}
    busy = cores_busy_share(run)
    return {
        "nodes": run["nodes"],
        "source": source,
        "commit": run.get("commit"),
        "nodes_per_real_hour": throughput.get("per_real_hour"),
        "nodes_per_lab_hour": throughput.get("per_lab_hour"),
        "cpu_s_per_node": run["cpu_s_per_node"],
        "cpu_s_per_node_with_datastores": run.get("cpu_s_per_node_with_datastores"),
        "p99_ms": _p99(run),
        "makespan_ratio": run.get("makespan_ratio"),
        "cores_busy_share": busy,
        "bound_by": None if busy is None else "cores" if busy >= CORES_BOUND_SHARE else "one node",
        "first_pass": run.get("healthy_first_pass_rate"),
        "peak_total_rss_mb": memory.get("peak_total_rss_mb"),
        "machine_available_min_mb": memory.get("machine_available_min_mb"),
    }


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return round(value / base, 3)


def compare_tiers(runs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The tiers of `runs` ((where it came from, its JSON)), smallest first, each with its
    throughput and CPU a node against the smallest's. TiersRefused unless there are two or more
    sizes, all of one speed and soak, each with a throughput."""
    if len(runs) < 2:
        raise TiersRefused("tiers need two or more benchmark runs")
    settings = {(run.get("speed"), run.get("soak_hours")) for _, run in runs}
    if len(settings) > 1:
        listed = ", ".join(
            f"{source} (speed {run.get('speed')}, soak {run.get('soak_hours')} h)"
            for source, run in runs
        )
        raise TiersRefused(f"tiers compare only at one speed and soak: {listed}")
    missing = [
        source for source, run in runs if not (run.get("throughput") or {}).get("per_real_hour")
    ]
    if missing:
        raise TiersRefused(
            f"no throughput in {', '.join(missing)}: a run that did not finish, or one from "
            "before the benchmark reported it"
        )
    sizes = [run["nodes"] for _, run in runs]
    if len(set(sizes)) != len(sizes):
        raise TiersRefused(f"two runs of one size: {sorted(sizes)}")
    rows = sorted((tier_row(run, source) for source, run in runs), key=lambda r: r["nodes"])
    base = rows[0]
    for row in rows:
        row["throughput_vs_smallest"] = _ratio(
            row["nodes_per_real_hour"], base["nodes_per_real_hour"]
        )
        row["cpu_vs_smallest"] = _ratio(row["cpu_s_per_node"], base["cpu_s_per_node"])
        row["linear"] = all(
            ratio is not None and abs(ratio - 1) <= LINEAR_WITHIN
            for ratio in (row["throughput_vs_smallest"], row["cpu_vs_smallest"])
        )
    speed, soak = settings.pop()
    return {
        "speed": speed,
        "soak_hours": soak,
        "linear_within": LINEAR_WITHIN,
        "throughput_note": _throughput_note(base),
        "tiers": rows,
    }


def _throughput_note(smallest: dict[str, Any]) -> str | None:
    """Why the throughput ratios do not measure linearity, when the smallest tier left the cores
    idle: its rate is one node's lab time over the makespan, and a tier that fills the cores
    delivers more nodes an hour on the same machine."""
    if smallest["bound_by"] != "one node":
        return None
    return (
        f"the {smallest['nodes']}-node tier kept the cores {smallest['cores_busy_share']:.0%} busy "
        f"and ended {smallest['makespan_ratio']} times one node's time: its throughput is bound "
        "by one node's time, not by the machine, so a larger tier's throughput ratio measures "
        "the room the smaller left, not linearity; compare CPU a node, or tiers that both "
        f"keep the cores {CORES_BOUND_SHARE:.0%} busy or more"
    )


def tiers_plot(table: dict[str, Any], path: Path) -> None:
    """Throughput, CPU a node and p99 event-to-browser against the number of nodes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table["tiers"]
    nodes = [r["nodes"] for r in rows]
    panels = (
        ("nodes to awaiting approval\nper real hour", [r["nodes_per_real_hour"] for r in rows]),
        ("orchestration CPU\nper node (s)", [r["cpu_s_per_node"] for r in rows]),
        ("event-to-browser\np99 (ms)", [r["p99_ms"] for r in rows]),
    )
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), dpi=100)
    for ax, (label, values) in zip(axes, panels, strict=True):
        points = [(n, v) for n, v in zip(nodes, values, strict=True) if v is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", color="#2f6fd6")
        ax.set_xlabel("nodes")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    fig.suptitle(f"Scale tiers at speed {table['speed']:g}, soak {table['soak_hours']:g} h")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
