"""`manage.py bench_sushy [--runs 5] [--json docs/bench-sushy-decision.json] [--no-emulator]`.

A benchmark, not a test: the same Redfish sequence through OpenStack's sushy and through
Greenlight's RedfishClient, against the lab's dell, hpe, supermicro and dgx BMCs and sushy-tools'
fake driver (lab/bench_sushy.py says what is measured and how). Prints a table, writes the JSON
the sushy decision in docs/redfish.md quotes.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from lab.bench_sushy import bench, table


class Command(BaseCommand):
    help = "Measure sushy 5.14.0 against RedfishClient on the lab's BMCs and sushy-tools."

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=5, help="Runs per BMC and library")
        parser.add_argument(
            "--json",
            dest="json_path",
            default=str(Path(settings.BASE_DIR) / "docs" / "bench-sushy-decision.json"),
            help="Write the results here",
        )
        parser.add_argument(
            "--no-emulator", action="store_true", help="Lab BMCs only, without sushy-tools"
        )

    def handle(self, *args, **options):
        result = bench(options["runs"], with_emulator=not options["no_emulator"])
        self.stdout.write(table(result))
        path = Path(options["json_path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n")
        self.stdout.write(f"\nwritten to {path}")
