"""`manage.py enroll_bmcs FILE`: discover and enroll every BMC of a targets file, a few at once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ...intake.bulk import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    OPTIONAL_TARGET_COLUMNS,
    TARGET_COLUMNS,
    Outcome,
    enroll_targets,
    read_targets,
)

# Seconds between progress lines: a hall's intake takes minutes, and silence looks like a hang.
PROGRESS_EVERY_S = 5.0


class Command(BaseCommand):
    help = (
        f"Read each BMC of a CSV file ({', '.join(TARGET_COLUMNS)}; optional "
        f"{', '.join(OPTIONAL_TARGET_COLUMNS)}) over Redfish and create or update its node, "
        "checking it against its SKU. Every row is checked first: a file with a bad row enrolls "
        "nothing. A BMC that fails is reported with its line; the others go on."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--concurrency",
            type=int,
            default=DEFAULT_CONCURRENCY,
            help=f"BMCs enrolled at once, 1-{MAX_CONCURRENCY}; each holds a database connection",
        )
        parser.add_argument("--timeout", type=float, default=10.0, help="seconds per BMC request")
        parser.add_argument("--json", type=Path, help="also write the report as JSON here")

    def handle(self, *args, file: Path, concurrency: int, timeout: float, **options) -> None:
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise CommandError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}")
        try:
            text = file.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {file}: {exc}") from None
        targets, errors = read_targets(text)
        if errors:
            for error in errors:
                self.stderr.write(str(error))
            raise CommandError(f"{len(errors)} problem(s) in {file.name}; nothing was enrolled")
        progress = _Progress(self.stdout.write)
        report = enroll_targets(
            targets,
            concurrency=concurrency,
            actor_label="enroll_bmcs",
            timeout=timeout,
            on_outcome=progress,
        )
        for outcome in report.failed:
            self.stderr.write(f"line {outcome.line}: {outcome.bmc_address}: {outcome.error}")
        if options["json"]:
            options["json"].write_text(json.dumps(report_json(report), indent=2))
        if report.failed:
            raise CommandError(report.summary())
        self.stdout.write(report.summary())


def report_json(report) -> dict:
    """The report as JSON: counts, rate, and each target's outcome (never a password)."""
    return {
        "concurrency": report.concurrency,
        "most_in_flight": report.most_in_flight,
        "elapsed_s": round(report.elapsed_s, 3),
        "nodes_per_minute": round(report.nodes_per_minute, 1),
        "enrolled": len(report.enrolled),
        "failed": len(report.failed),
        "outcomes": [vars(outcome) for outcome in report.outcomes],
    }


class _Progress:
    """Writes a progress line every few seconds and at the end, from the workers' threads."""

    def __init__(self, write) -> None:
        self.write = write
        self.started = time.monotonic()
        self.last = self.started
        self.lock = threading.Lock()

    def __call__(self, outcome: Outcome, done: int, total: int) -> None:
        now = time.monotonic()
        with self.lock:
            if done < total and now - self.last < PROGRESS_EVERY_S:
                return
            self.last = now
            rate = 60.0 * done / max(now - self.started, 1e-9)
            self.write(f"{done}/{total} BMCs read ({rate:.0f} a minute)")
