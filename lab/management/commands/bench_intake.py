"""`manage.py bench_intake --nodes N`: enroll a hall of N lab BMCs and report nodes a minute."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from provisioning.intake.bulk import DEFAULT_CONCURRENCY, MAX_CONCURRENCY

from ...bench_intake import run_intake_bench


class Command(BaseCommand):
    help = (
        "Start N lab BMCs in their own process, hand them over as a targets file and enroll "
        "them (probe, SKU check, inventory) as enroll_bmcs does; print and write the rate."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--nodes", type=int, default=741)
        parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", type=Path, help="where to write the result")

    def handle(self, *args, nodes: int, concurrency: int, seed: int, **options) -> None:
        if nodes < 1 or not 1 <= concurrency <= MAX_CONCURRENCY:
            raise CommandError(f"--nodes >= 1 and --concurrency 1-{MAX_CONCURRENCY}")
        try:
            result = run_intake_bench(nodes, concurrency=concurrency, seed=seed)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        text = json.dumps(result, indent=2)
        if options["json"]:
            options["json"].parent.mkdir(parents=True, exist_ok=True)
            options["json"].write_text(text + "\n")
        self.stdout.write(text)
