"""`manage.py enroll_csv FILE`: enroll the nodes of a CSV file, all of them or none."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from fleet.enrollment_csv import COLUMNS, enroll_csv


class Command(BaseCommand):
    help = (
        f"Enroll nodes from a CSV file with the columns {', '.join(COLUMNS)}. Every row is "
        "checked first; a file with any bad row imports nothing. Importing a file again leaves "
        "the nodes already enrolled as they are."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options) -> None:
        try:
            text = file.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {file}: {exc}") from None
        report = enroll_csv(text, actor_label="enroll_csv", source=file.name)
        if not report.ok:
            for error in report.errors:
                self.stderr.write(str(error))
            raise CommandError(report.summary())
        self.stdout.write(report.summary())
