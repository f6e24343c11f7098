"""What every parser returns: the tool's facts, the parts it blames, or why it cannot be read.

Pure Python on purpose: the agent, the lab and the tests import parsers without Django.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """How bad a finding is. Only CRITICAL fails a gate on its own."""

    CRITICAL = "critical"
    # The part must be reset (not replaced) before acceptance; a recurrence is CRITICAL.
    RESET_REQUIRED = "reset_required"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """One observation about one part, e.g. part="GPU 3", message="GPU 3: XID 79 (...)"."""

    part: str
    kind: str  # gpu, nic, nvme, nvswitch, nvlink, node
    message: str
    severity: Severity = Severity.CRITICAL
    # Machine-readable reason, so judging can weigh a finding against a threshold.
    code: str = ""
    part_serial: str = ""

    def to_dict(self) -> dict[str, str]:
        """Return the finding as JSON-able data."""
        data = asdict(self)
        data["severity"] = str(self.severity)
        return data


@dataclass
class ParseResult:
    """A tool's output read into metrics and findings, or an error saying why it cannot be judged."""

    tool: str
    version: str | None = None
    driver_version: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the output could be read."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """Return the result as JSON-able data (the gate_parse shape)."""
        return {
            "tool": self.tool,
            "version": self.version,
            "driver_version": self.driver_version,
            "metrics": self.metrics,
            "findings": [f.to_dict() for f in self.findings],
            "error": self.error,
        }


def failed(tool: str, reason: str) -> ParseResult:
    """Return a result that says the output cannot be judged (never a pass)."""
    return ParseResult(tool=tool, error=reason)


def blank_reason(text: str) -> str | None:
    """Say why text is unusable before parsing it at all: empty, whitespace or binary."""
    if not text or not text.strip():
        return "empty output"
    if "\x00" in text:
        return "binary data, not tool output"
    return None


# What launchers put before each line of a rank's output: SkyPilot's "(head, rank=0, pid=1) ",
# test harnesses' "12:00:01 DEBUG| ", Slurm's `srun --label` rank right-aligned to the widest
# rank (" 0: ", "12: ", a bare " 0:" on an empty line), Open MPI's --tag-output "[1,0]<stdout>:".
# The Slurm rank must be followed by a space or the line's end, so "12:00:01" is never a rank.
LAUNCHER_PREFIX = re.compile(
    r"^(?:\([^()]*\)\s)?"
    r"(?:\d\d:\d\d:\d\d DEBUG\| (?:\[std(?:out|err)\] )?)?"
    r"(?:\s*\d{1,6}:(?: |$))?"
    r"(?:\[\d+,\d+\]<std(?:out|err)>:)?"
)
# What a person adds when pasting output into an issue, a mail or a runbook: quote markers
# ("> ", "> > ", a bare ">" on an empty line) and elision lines ("[...]", "...", "<snip>").
QUOTE_MARKER = re.compile(r"^(?:[ \t]{0,3}>(?: |(?=>)|$))+")
ELISION = re.compile(
    r"^\s*#?\s*(?:\[\s*(?:\.{3}|…|snip(?:ped)?|(?:output )?(?:truncated|omitted|elided))[^\]]*\]"
    r"|\.{3,}|…|<snip(?:ped)?>|\(\.{3}\))(?:\s.*)?$",
    re.IGNORECASE,
)


def strip_launcher(line: str) -> str:
    """A line of tool output without the prefix an MPI or cluster launcher added to it."""
    return LAUNCHER_PREFIX.sub("", line, count=1)


def unquote(line: str) -> str:
    """A pasted line without the quote markers ("> ") a mail or issue reply put before it."""
    return QUOTE_MARKER.sub("", line, count=1)


def is_elision(line: str) -> bool:
    """True when the line is a paster's mark that something was left out ("[...]", "...")."""
    return bool(ELISION.match(line))


def pasted_lines(text: str) -> list[str]:
    """The tool's own lines from a paste: quote markers and launcher prefixes taken off.

    A block indented as a whole (a Markdown list item, a mail) is dedented first. Elision lines
    are kept: callers count them, since what a paste leaves out must be said."""
    lines = [unquote(line) for line in text.splitlines()]
    if any(line[:1] not in _MARGIN_CHARS for line in lines if line):
        # No margin common to every line: dedent would only empty the lines of spaces and tabs
        # (and drop a last one so emptied), after scanning the whole text twice with its
        # patterns; a tool's own output, unindented, is nearly every paste a gate reads.
        lines = [line if line.strip(_MARGIN_CHARS) else "" for line in lines]
        if lines and not lines[-1]:
            lines.pop()
    else:
        lines = textwrap.dedent("\n".join(lines)).splitlines()
    return [strip_launcher(line) for line in lines]


# What textwrap.dedent counts as a margin.
_MARGIN_CHARS = " \t"


def load_json_object(text: str) -> tuple[dict | None, str | None]:
    """Read a JSON object, skipping the banner lines some tools print before it."""
    start = text.find("{")
    if start < 0:
        return None, "no JSON object in the output"
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text[start:].rstrip()) - 1:
            return None, f"truncated JSON (ends at line {exc.lineno})"
        return None, f"not valid JSON: {exc.msg} at line {exc.lineno}"
    if not isinstance(data, dict):
        return None, "JSON is not an object"
    return data, None


def to_float(value: Any) -> float | None:
    """Read a number from '34 C', '690.52 W', '12', 'N/A' (None)."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    head = str(value).strip().split(" ")[0]
    try:
        return float(head)
    except ValueError:
        return None
