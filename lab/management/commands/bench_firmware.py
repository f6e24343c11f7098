"""`manage.py bench_firmware --nodes N --sites S --site-cap C`: a firmware wave over N lab nodes."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from provisioning.day2.rollouts import MAX_CONCURRENCY
from provisioning.day2.waves import BadWaves, parse_policy

from ...bench_firmware import FirmwareBenchConfig, run_firmware_bench


class Command(BaseCommand):
    help = (
        "Roll a newer BMC image out over N lab NVLink switch trays spread over sites, in waves "
        "under a per-site cap, through the real rollout and runs; print and write the makespan, "
        "the waves, the peak in flight per site against the cap and the most mutating acts any "
        "BMC answered at once."
    )

    def add_arguments(self, parser) -> None:
        for field in fields(FirmwareBenchConfig):
            flag = "--" + field.name.replace("_", "-")
            parser.add_argument(flag, type=type(field.default), default=field.default)
        parser.add_argument("--json", type=Path, help="where to write the result")
        parser.add_argument("--note", default="", help="a word on the machine (shared, busy)")
        parser.add_argument("--log-dir", type=Path, help="the workers' logs (default: dropped)")

    def handle(self, *args, **options) -> None:
        config = FirmwareBenchConfig(
            **{f.name: options[f.name] for f in fields(FirmwareBenchConfig)}
        )
        if config.nodes < 1 or config.sites < 1 or not 1 <= config.concurrency <= MAX_CONCURRENCY:
            raise CommandError(f"--nodes >= 1, --sites >= 1, --concurrency 1-{MAX_CONCURRENCY}")
        try:
            parse_policy({"canary": config.canary, "wave_growth": config.wave_growth,
                          "site_cap": config.site_cap, "rack_cap": config.rack_cap,
                          "failure_threshold_pct": config.failure_threshold_pct})  # fmt: skip
            result = run_firmware_bench(config, options["log_dir"])
        except (BadWaves, RuntimeError) as exc:
            raise CommandError(str(exc)) from None
        if options["note"]:
            result["machine"]["note"] = options["note"]
        text = json.dumps(result, indent=2, default=str)
        if options["json"]:
            options["json"].parent.mkdir(parents=True, exist_ok=True)
            options["json"].write_text(text + "\n")
        self.stdout.write(text)
