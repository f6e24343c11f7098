"""`manage.py bench_tiers A.json B.json ...`: benchmark runs of several sizes as scale tiers."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from lab.bench_tiers import TiersRefused, compare_tiers, tiers_plot


class Command(BaseCommand):
    help = (
        "Compare `manage.py bench` runs of different sizes (one speed and soak): throughput, CPU "
        "a node and p99 against the number of nodes, with a plot."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("runs", nargs="+", help="benchmark JSON files, one per size")
        parser.add_argument("--json", default="var/bench/tiers.json")
        parser.add_argument("--plot", default="var/bench/tiers.png")

    def handle(self, *args, **options) -> None:
        runs = [(name, _read_run(name)) for name in options["runs"]]
        try:
            table = compare_tiers(runs)
        except TiersRefused as exc:
            raise CommandError(str(exc)) from None
        path, plot = Path(options["json"]), Path(options["plot"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(table, indent=2))
        tiers_plot(table, plot)
        self.stdout.write(
            f"speed {table['speed']:g}, soak {table['soak_hours']:g} h; linear within "
            f"{table['linear_within']:.0%} of the smallest tier"
        )
        for row in table["tiers"]:
            self.stdout.write(
                f"{row['nodes']:>6} nodes: {row['nodes_per_real_hour']} a real hour "
                f"(x{row['throughput_vs_smallest']}), CPU {row['cpu_s_per_node']} s a node "
                f"(x{row['cpu_vs_smallest']}), p99 {row['p99_ms']} ms, peak memory "
                f"{row['peak_total_rss_mb']} MB, cores {_share(row['cores_busy_share'])} busy, "
                f"{'linear' if row['linear'] else 'NOT linear'}"
            )
        if table["throughput_note"]:
            self.stdout.write(f"note: {table['throughput_note']}")
        self.stdout.write(f"written to {path} and {plot}")


def _share(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def _read_run(name: str) -> dict:
    """A benchmark JSON, or a CommandError naming the file."""
    try:
        run = json.loads(Path(name).read_text())
    except (OSError, ValueError) as exc:
        raise CommandError(f"{name}: not a benchmark JSON ({exc})") from None
    if not isinstance(run, dict) or "nodes" not in run:
        raise CommandError(f"{name}: not a benchmark JSON (no 'nodes')")
    return run
