"""`manage.py bench`: the bring-up benchmark on the lab; prints and writes its numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from lab.bench import run_bench
from lab.bench_calibration import CalibrationRefused
from lab.run import LabRunConfig


class Command(BaseCommand):
    help = "A lab deployment through the full pipeline and gates, measured."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--nodes", type=int, default=741)
        parser.add_argument("--racks", type=int, default=0, help="default: 37 nodes a rack")
        parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
        parser.add_argument(
            "--concurrency",
            type=int,
            default=12,
            help="threads per worker (each holds a database connection: mind max_connections)",
        )
        parser.add_argument(
            "--speed",
            type=float,
            default=4.0,
            help="lab seconds per second; the control plane's CPU does not speed up with the lab, "
            "so at speed S the nodes ask S times the work per second that real ones would",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--soak-hours", type=float, default=1.0)
        parser.add_argument("--timeout", type=float, default=7200.0, help="real seconds")
        parser.add_argument(
            "--reuse-calibration",
            action="store_true",
            help="take one node's uncontended lab time from --calibration instead of running the "
            "calibration rack first; refused unless measured on this commit, speed and soak",
        )
        parser.add_argument("--calibration", default="var/bench/calibration.json")
        parser.add_argument("--json", default="var/bench/bench.json")
        parser.add_argument("--plot", default="var/bench/states.png")

    def handle(self, *args, **options) -> None:
        config = LabRunConfig(
            nodes=options["nodes"],
            racks=options["racks"] or math.ceil(options["nodes"] / 37),
            faults="standard",
            seed=options["seed"],
            speed=options["speed"],
            workers=options["workers"],
            concurrency=options["concurrency"],
            soak_hours=options["soak_hours"],
            timeout_s=options["timeout"],
            site="bench",
            rack="BENCH",
            power_batch=8,
        )
        path = Path(options["json"])
        try:
            results = run_bench(
                config,
                path.parent / "logs",
                Path(options["plot"]),
                Path(options["calibration"]),
                reuse=options["reuse_calibration"],
            )
        except CalibrationRefused as exc:
            raise CommandError(str(exc)) from None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=2))
        for key, value in results.items():
            if key not in ("failed_nodes", "machine"):
                self.stdout.write(f"{key:>26}: {value}")
        self.stdout.write(f"{'machine':>26}: {results['machine']}")
        self.stdout.write(f"written to {path} and {options['plot']}")
