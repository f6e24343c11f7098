"""Enrollment of many BMCs at once: read each over Redfish (probe, SKU check, inventory) with a
bounded number in flight, and report what each one did.

A hall arrives as a list of BMC addresses and logins. Enrolling them one after another spends
most of the time waiting on BMCs (a TLS handshake and a dozen Redfish reads each), so a few
enrollments run side by side, each in its own thread with its own database connection. One
BMC's failure is that target's error, never the others': the report lists every failure with
its line and address, and a target file is read whole before anything is enrolled, so a broken
row stops the file with nothing half done.

Targets file (CSV, header row): bmc_address, bmc_username, bmc_password, sku, rack (SITE/RACK),
position, fingerprint (optional), plain_http_reason (optional). The password never appears in a
report, an error or a log line.
"""

from __future__ import annotations

import csv
import io
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import IntegrityError, connections

from fleet.enrollment_csv import RowError
from fleet.models import Rack, Sku

from ..redfish import RedfishError
from .enrollment import EnrollmentError, enroll_node, resolve_rack

# Enrollments in flight by default: enough to keep two cores busy while most wait on BMCs,
# few enough that each keeps its own database connection without crowding PostgreSQL's 100.
DEFAULT_CONCURRENCY = 16
MAX_CONCURRENCY = 64

TARGET_COLUMNS = ("bmc_address", "bmc_username", "bmc_password", "sku", "rack", "position")
OPTIONAL_TARGET_COLUMNS = ("fingerprint", "plain_http_reason")


@dataclass(frozen=True)
class Target:
    """One BMC to enroll, with where its node sits."""

    line: int
    bmc_address: str
    bmc_username: str
    bmc_password: str = field(repr=False)
    sku: Sku | None = None
    rack: Rack | None = None
    position: int | None = None
    fingerprint: str = ""
    plain_http_reason: str = ""


@dataclass(frozen=True)
class Outcome:
    """What enrolling one target did: the node's serial, or the error that stopped it."""

    line: int
    bmc_address: str
    serial: str = ""
    created: bool = False
    error: str = ""
    seconds: float = 0.0


@dataclass
class IntakeReport:
    """Every target's outcome, and how fast the whole intake went."""

    concurrency: int
    outcomes: list[Outcome] = field(default_factory=list)
    elapsed_s: float = 0.0
    most_in_flight: int = 0

    @property
    def enrolled(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.error]

    @property
    def failed(self) -> list[Outcome]:
        return sorted((o for o in self.outcomes if o.error), key=lambda o: o.line)

    @property
    def nodes_per_minute(self) -> float:
        return 60.0 * len(self.enrolled) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def summary(self) -> str:
        created = sum(1 for o in self.enrolled if o.created)
        return (
            f"{len(self.enrolled)} of {len(self.outcomes)} BMC(s) enrolled ({created} new), "
            f"{len(self.failed)} failed, in {self.elapsed_s:.1f} s "
            f"({self.nodes_per_minute:.0f} nodes a minute, {self.concurrency} at a time)"
        )


def read_targets(text: str) -> tuple[list[Target], list[RowError]]:
    """The targets of a CSV file, or every reason its rows are refused (then no targets)."""
    reader = csv.reader(io.StringIO(text))
    header = [name.strip().lower() for name in next(reader, [])]
    missing = [name for name in TARGET_COLUMNS if name not in header]
    unknown = [n for n in header if n not in TARGET_COLUMNS + OPTIONAL_TARGET_COLUMNS]
    if missing or unknown:
        problems = [f"missing {', '.join(missing)}"] if missing else []
        problems += [f"unknown {', '.join(unknown)}"] if unknown else []
        return [], [RowError(1, "header", "; ".join(problems))]
    targets: list[Target] = []
    errors: list[RowError] = []
    skus = {sku.name: sku for sku in Sku.objects.all()}
    racks: dict[str, Rack | None] = {}
    for values in reader:
        line = reader.line_num
        if not any(value.strip() for value in values):
            continue
        # Optional columns at the end of the header may be left off a row.
        if len(values) < len(header) and all(
            name in OPTIONAL_TARGET_COLUMNS for name in header[len(values) :]
        ):
            values = values + [""] * (len(header) - len(values))
        if len(values) != len(header):
            errors.append(RowError(line, "row", f"{len(values)} fields, header has {len(header)}"))
            continue
        row = {name: value.strip() for name, value in zip(header, values, strict=True)}
        row_errors = _check_row(line, row, skus, racks)
        if row_errors:
            errors.extend(row_errors)
            continue
        targets.append(
            Target(
                line=line,
                bmc_address=row["bmc_address"],
                bmc_username=row["bmc_username"],
                bmc_password=row["bmc_password"],
                sku=skus[row["sku"]] if row["sku"] else None,
                rack=racks[row["rack"]] if row["rack"] else None,
                position=int(row["position"]) if row["position"] else None,
                fingerprint=row.get("fingerprint", ""),
                plain_http_reason=row.get("plain_http_reason", ""),
            )
        )
    addresses: dict[str, int] = {}
    for target in targets:
        first = addresses.setdefault(target.bmc_address, target.line)
        if first != target.line:
            errors.append(RowError(target.line, "bmc_address", f"also on line {first}"))
    return ([], errors) if errors else (targets, [])


def _check_row(
    line: int, row: dict[str, str], skus: dict[str, Sku], racks: dict[str, Rack | None]
) -> list[RowError]:
    errors = []
    if not row["bmc_address"].lower().startswith(("https://", "http://")):
        errors.append(RowError(line, "bmc_address", "not an http(s):// URL"))
    for name in ("bmc_username", "bmc_password"):
        if not row[name]:
            errors.append(RowError(line, name, "empty"))
    if row["sku"] and row["sku"] not in skus:
        errors.append(RowError(line, "sku", f"no SKU named {row['sku']!r}"))
    if row["rack"] and row["rack"] not in racks:
        try:
            racks[row["rack"]] = resolve_rack(row["rack"])
        except EnrollmentError as exc:
            errors.append(RowError(line, "rack", str(exc)))
    if row["position"] and not (row["position"].isdigit() and int(row["position"]) > 0):
        errors.append(RowError(line, "position", "not a whole number of U above 0"))
    if row["position"] and not row["rack"]:
        errors.append(RowError(line, "position", "a position needs a rack"))
    return errors


def enroll_targets(
    targets: Iterable[Target],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    actor_label: str = "bulk enrollment",
    timeout: float = 10.0,
    on_outcome: Callable[[Outcome, int, int], None] | None = None,
) -> IntakeReport:
    """Enroll every target, at most `concurrency` at once; `on_outcome(outcome, done, total)`
    is called as each finishes (from its worker thread)."""
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be between 1 and {MAX_CONCURRENCY}, not {concurrency}")
    pending: queue.SimpleQueue[Target] = queue.SimpleQueue()
    todo = list(targets)
    for target in todo:
        pending.put(target)
    report = IntakeReport(concurrency=concurrency)
    lock = threading.Lock()
    in_flight = 0

    def work() -> None:
        nonlocal in_flight
        try:
            while True:
                try:
                    target = pending.get_nowait()
                except queue.Empty:
                    return
                with lock:
                    in_flight += 1
                    report.most_in_flight = max(report.most_in_flight, in_flight)
                outcome = _enroll_one(target, actor_label, timeout)
                with lock:
                    in_flight -= 1
                    report.outcomes.append(outcome)
                    done = len(report.outcomes)
                if on_outcome is not None:
                    on_outcome(outcome, done, len(todo))
        finally:
            # Each thread opened its own connections; a pool thread's would outlive the intake.
            connections.close_all()

    started = time.perf_counter()
    workers = [
        threading.Thread(target=work, name=f"intake-{n}", daemon=True)
        for n in range(min(concurrency, len(todo)))
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    report.elapsed_s = time.perf_counter() - started
    report.outcomes.sort(key=lambda o: o.line)
    return report


def _enroll_one(target: Target, actor_label: str, timeout: float) -> Outcome:
    started = time.perf_counter()
    try:
        result = enroll_node(
            target.bmc_address,
            target.bmc_username,
            target.bmc_password,
            sku=target.sku,
            rack=target.rack,
            position=target.position,
            fingerprint=target.fingerprint or None,
            actor_label=actor_label,
            timeout=timeout,
            plain_http_reason=target.plain_http_reason,
        )
    except (EnrollmentError, RedfishError, ValueError) as exc:
        return _failed(target, str(exc), started)
    except IntegrityError as exc:
        # Two rows of one file reached the same node, or one rack position, at once.
        return _failed(target, f"conflicts with another enrollment: {exc}", started)
    return Outcome(
        target.line,
        target.bmc_address,
        serial=result.node.serial,
        created=result.created,
        seconds=time.perf_counter() - started,
    )


def _failed(target: Target, error: str, started: float) -> Outcome:
    return Outcome(
        target.line, target.bmc_address, error=error, seconds=time.perf_counter() - started
    )
