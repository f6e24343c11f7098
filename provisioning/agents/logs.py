"""A phase's log: what its agent commands relayed, then the engine's own notes, read page by page.

The agent relays each command's output as it runs (agents' API `commands/<id>/log`) and again
with the result; it is stored on the command (`AgentCommand.output`, at most
`protocol.MAX_OUTPUT_CHARS` each), and the engine's notes on the phase record (`PhaseRecord.log`).
A phase's log is those chunks in order, each command's under a header line. A long soak sends
hundreds of commands, so a page loads only the chunks it shows: every chunk's line count is
computed by the database, never by reading all the text.

Relayed output comes from the node, so it is redacted before anyone reads it: the node's BMC
password, its boot credentials and the tokens of the agents that relayed it never show, even if
a tool printed them (the kernel log, for one, carries the kernel command line and so the boot
credential).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from django.db.models import Exists, F, OuterRef, QuerySet, Value
from django.db.models.functions import Length, Replace, Right

from ..models import AgentCommand, PhaseRecord
from .redaction import redactor_for

LINES_PER_PAGE = 500


@dataclass(frozen=True)
class Chunk:
    """One part of a phase's log: a command's output (command set) or the engine's notes."""

    header: str
    lines: int  # the output's lines, not counting the header
    command_id: int | None = None

    @property
    def span(self) -> int:
        return 1 + self.lines


def _line_count(length: int, newlines: int, last: str) -> int:
    """Lines of a text of `length` characters with `newlines` newlines ending in `last`."""
    if not length:
        return 0
    return newlines + (0 if last == "\n" else 1)


def _lines(text: str) -> list[str]:
    """The text's lines, split exactly as `_line_count` counts them (on newlines only)."""
    if not text:
        return []
    parts = text.split("\n")
    return parts[:-1] if text.endswith("\n") else parts


def _commands(record: PhaseRecord) -> QuerySet[AgentCommand]:
    return AgentCommand.objects.filter(run_id=record.run_id, phase=record.phase).order_by(
        "created_at", "pk"
    )


def _command_header(command_id: int, kind: str, status: str, exit_code: int | None) -> str:
    code = "" if exit_code is None else f", exit {exit_code}"
    return f"── command {command_id}: {kind} ({status}{code}) ──"


def chunks(record: PhaseRecord) -> list[Chunk]:
    """The log's chunks in order with their line counts, read without reading their text."""
    rows = (
        _commands(record)
        .exclude(output="")
        .annotate(
            chars=Length("output"),
            newlines=Length("output") - Length(Replace(F("output"), Value("\n"), Value(""))),
            last=Right("output", 1),
        )
        .values_list("pk", "kind", "status", "exit_code", "chars", "newlines", "last")
    )
    out = [
        Chunk(_command_header(pk, kind, status, code), _line_count(chars, nl, last), pk)
        for pk, kind, status, code, chars, nl, last in rows
    ]
    if record.log:
        out.append(Chunk("── engine ──", len(_lines(record.log))))
    return out


def with_relayed(records: QuerySet[PhaseRecord]) -> QuerySet[PhaseRecord]:
    """The records, each with `relayed`: whether a command of its phase relayed any output.

    Read in the records' own query (a subquery), so the panel's query count does not grow.
    """
    relayed = AgentCommand.objects.filter(run=OuterRef("run"), phase=OuterRef("phase")).exclude(
        output=""
    )
    return records.annotate(relayed=Exists(relayed))


def has_log(record: PhaseRecord) -> bool:
    """Whether the record has anything to read (read from `with_relayed`)."""
    return bool(record.log) or bool(getattr(record, "relayed", False))


@dataclass(frozen=True)
class Line:
    number: int  # from 1, over the whole log
    text: str
    header: bool = False


@dataclass(frozen=True)
class LogPage:
    """One page of a phase's log."""

    record: PhaseRecord
    number: int  # from 1
    pages: int
    total_lines: int
    lines: list[Line]

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages

    @property
    def first_line(self) -> int:
        return self.lines[0].number if self.lines else 0

    @property
    def last_line(self) -> int:
        return self.lines[-1].number if self.lines else 0


class NoSuchPage(ValueError):
    """A page number that is not a page of this log."""


def page_count(total_lines: int, per_page: int = LINES_PER_PAGE) -> int:
    return max(1, -(-total_lines // per_page))


def page_number(asked: str, pages: int) -> int:
    """The page `asked` names ("", a number from 1, or "last"); NoSuchPage for anything else."""
    if asked in ("", None):
        return 1
    if asked == "last":
        return pages
    if not asked.isdigit() or not 1 <= int(asked) <= pages:
        raise NoSuchPage(f"page must be a number from 1 to {pages}, or 'last'; not {asked!r}")
    return int(asked)


def _texts(record: PhaseRecord, wanted: list[Chunk]) -> dict[int | None, str]:
    ids = [c.command_id for c in wanted if c.command_id is not None]
    texts: dict[int | None, str] = dict(
        AgentCommand.objects.filter(pk__in=ids).order_by().values_list("pk", "output")
    )
    texts[None] = record.log
    return texts


def _session_ids(record: PhaseRecord) -> set[int]:
    return set(
        _commands(record)
        .exclude(session=None)
        .order_by()
        .values_list("session_id", flat=True)
        .distinct()
    )


def read_page(record: PhaseRecord, asked: str = "", per_page: int = LINES_PER_PAGE) -> LogPage:
    """Page `asked` of the record's log, redacted; only the chunks it shows are read."""
    parts = chunks(record)
    total = sum(c.span for c in parts)
    pages = page_count(total, per_page)
    number = page_number(asked, pages)
    start, end = (number - 1) * per_page, number * per_page  # 0-based, over the whole log
    shown: list[tuple[int, Chunk]] = []
    offset = 0
    for chunk in parts:
        if offset < end and offset + chunk.span > start:
            shown.append((offset, chunk))
        offset += chunk.span
    texts = _texts(record, [c for _, c in shown])
    redact = redactor_for(record.run.node, _session_ids(record))
    lines: list[Line] = []
    for at, chunk in shown:
        body = _lines(redact(texts.get(chunk.command_id, "")))
        for i, text in enumerate([chunk.header, *body]):
            if start <= at + i < end:
                lines.append(Line(at + i + 1, text, header=i == 0))
    return LogPage(record, number, pages, total, lines)


def stream(record: PhaseRecord) -> Iterator[str]:
    """The whole log, redacted, as text in pieces (one chunk at a time) for a download."""
    redact = redactor_for(record.run.node, _session_ids(record))
    rows = _commands(record).exclude(output="")
    for pk, kind, status, code, output in rows.values_list(
        "pk", "kind", "status", "exit_code", "output"
    ).iterator():
        text = redact(output)
        yield _command_header(pk, kind, status, code) + "\n"
        yield text if text.endswith("\n") else text + "\n"
    if record.log:
        yield "── engine ──\n"
        text = redact(record.log)
        yield text if text.endswith("\n") else text + "\n"


def download_name(record: PhaseRecord) -> str:
    """`<serial>_run-<id>_<phase>.log`, in characters every browser and file system takes."""
    raw = f"{record.run.node.serial}_run-{record.run_id}_{record.phase}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", raw) + ".log"
