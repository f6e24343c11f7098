"""`manage.py gate_parse TOOL FILE`: print what a parser read from a tool's output, as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from acceptance.parsers import PARSERS


class Command(BaseCommand):
    help = (
        "Parse one tool's raw output and print tool, version, metrics, findings and error as JSON."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tool", choices=sorted(PARSERS), help="the tool that wrote FILE")
        parser.add_argument("file", help="the tool's raw output; '-' reads stdin")

    def handle(self, *args, **options) -> None:
        text = self._read(options["file"])
        result = PARSERS[options["tool"]](text)
        payload = result.to_dict()
        self.stdout.write(json.dumps(payload, indent=2, sort_keys=False))
        if result.error:
            # A non-zero exit lets scripts tell "cannot be judged" from a clean read.
            raise CommandError(f"{options['tool']}: {result.error}", returncode=2)

    def _read(self, name: str) -> str:
        if name == "-":
            return sys.stdin.read()
        path = Path(name)
        if not path.is_file():
            raise CommandError(f"no such file: {name}")
        # Undecodable bytes become U+FFFD rather than a crash; the parser then calls it garbage.
        return path.read_bytes().decode("utf-8", errors="replace")
