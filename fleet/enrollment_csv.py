"""Enrollment of nodes from a CSV file: validate every row, then import all rows or none.

Columns: serial, sku, site, rack, position, bmc_address, bmc_username, bmc_password, macs
(semicolon-separated), hostname (optional). A file with any bad row imports nothing and the report
lists every bad row with its line number and reason. A row whose serial is already enrolled with
the same values is left alone, so importing the same file twice changes nothing the second time.

The BMC password is never echoed: not in a report, a log line or an event.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from .choices import EventKind
from .events import record
from .models import PLAIN_HTTP_REFUSED, Node, Rack, Sku

logger = logging.getLogger(__name__)

REQUIRED_COLUMNS = (
    "serial",
    "sku",
    "site",
    "rack",
    "position",
    "bmc_address",
    "bmc_username",
    "bmc_password",
    "macs",
)
OPTIONAL_COLUMNS = ("hostname",)
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
_MAX_LENGTHS = {
    name: Node._meta.get_field(name).max_length
    for name in ("serial", "hostname", "bmc_address", "bmc_username")
}
MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
# Fields compared to decide whether a re-imported row matches the enrolled node.
_COMPARED = ("sku_id", "rack_id", "position", "bmc_address", "bmc_username", "hostname")


@dataclass(frozen=True)
class RowError:
    """One reason one line of the file was refused."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


@dataclass
class EnrollmentRow:
    """A validated row, ready to become a Node."""

    line: int
    serial: str
    sku: Sku
    rack: Rack
    position: int
    bmc_address: str
    bmc_username: str
    bmc_password: str = field(repr=False)
    macs: list[str]
    hostname: str


@dataclass
class EnrollmentReport:
    """What an import did, or why it did nothing."""

    errors: list[RowError] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def bad_lines(self) -> list[int]:
        return sorted({e.line for e in self.errors})

    def summary(self) -> str:
        if not self.ok:
            return (
                f"{len(self.bad_lines())} bad row(s), {len(self.errors)} problem(s); "
                "nothing was imported"
            )
        return f"{len(self.created)} node(s) enrolled, {len(self.unchanged)} already enrolled"


def _rows(text: str) -> tuple[list[str] | None, list[tuple[int, list[str]]]]:
    """Split the CSV into its header and (first line number, values) per non-blank row."""
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    end = 0
    for values in reader:
        start, end = end + 1, reader.line_num
        if not values or all(not v.strip() for v in values):
            continue
        values = [v.strip() for v in values]
        if header is None:
            header = [v.lower() for v in values]
        else:
            rows.append((start, values))
    return header, rows


def _check_header(header: list[str] | None) -> list[RowError]:
    if header is None:
        return [RowError(1, "(file)", "the file is empty; expected a header row")]
    errors = []
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        errors.append(RowError(1, "(header)", f"missing column(s): {', '.join(missing)}"))
    unknown = [c for c in header if c not in COLUMNS]
    if unknown:
        errors.append(
            RowError(
                1,
                "(header)",
                f"unknown column(s): {', '.join(unknown)}; expected {', '.join(COLUMNS)}",
            )
        )
    duplicated = sorted({c for c in header if header.count(c) > 1})
    if duplicated:
        errors.append(RowError(1, "(header)", f"repeated column(s): {', '.join(duplicated)}"))
    return errors


class _Validator:
    """Checks rows against the database and against each other; collects every error."""

    def __init__(self) -> None:
        self.skus = {s.name: s for s in Sku.objects.all()}
        self.racks = {(r.site.name, r.name): r for r in Rack.objects.select_related("site")}
        self.existing = {n.serial: n for n in Node.objects.all()}
        self.occupied = {
            (n.rack_id, n.position): n.serial for n in self.existing.values() if n.rack_id
        }
        self.mac_owner = {
            str(mac).lower(): n.serial for n in self.existing.values() for mac in n.mac_addresses
        }
        self.seen_serials: dict[str, int] = {}
        self.seen_positions: dict[tuple[int, int], int] = {}
        self.seen_macs: dict[str, int] = {}
        self.errors: list[RowError] = []

    def error(self, line: int, name: str, message: str) -> None:
        self.errors.append(RowError(line, name, message))

    def row(self, line: int, data: dict[str, str]) -> EnrollmentRow | None:
        before = len(self.errors)
        for name in REQUIRED_COLUMNS:
            if not data.get(name):
                self.error(line, name, "is missing")
        for name, limit in _MAX_LENGTHS.items():
            if len(data.get(name, "")) > limit:
                self.error(line, name, f"is longer than {limit} characters")
        serial = data.get("serial", "")
        if serial:
            if serial in self.seen_serials:
                self.error(
                    line,
                    "serial",
                    f"duplicate serial {serial!r} (also on line {self.seen_serials[serial]})",
                )
            else:
                self.seen_serials[serial] = line
        sku = self.skus.get(data.get("sku", ""))
        if data.get("sku") and sku is None:
            self.error(line, "sku", f"unknown SKU {data['sku']!r}")
        rack = self._rack(line, data)
        position = self._position(line, data.get("position", ""), rack, serial)
        address = data.get("bmc_address", "")
        if address and not _is_bmc_url(address):
            self.error(line, "bmc_address", f"{address!r} is not an http(s)://host[:port] URL")
        elif address.lower().startswith("http://"):
            self.error(line, "bmc_address", PLAIN_HTTP_REFUSED)
        macs = self._macs(line, data.get("macs", ""), serial)
        if len(self.errors) > before:
            return None
        return EnrollmentRow(
            line=line,
            serial=serial,
            sku=sku,
            rack=rack,
            position=position,
            bmc_address=address,
            bmc_username=data["bmc_username"],
            bmc_password=data["bmc_password"],
            macs=macs,
            hostname=data.get("hostname", ""),
        )

    def _rack(self, line: int, data: dict[str, str]) -> Rack | None:
        site, name = data.get("site", ""), data.get("rack", "")
        if not site or not name:
            return None
        rack = self.racks.get((site, name))
        if rack is None:
            if not any(s == site for s, _ in self.racks):
                self.error(line, "site", f"unknown site {site!r}")
            else:
                self.error(line, "rack", f"unknown rack {name!r} in site {site!r}")
        return rack

    def _position(self, line: int, value: str, rack: Rack | None, serial: str) -> int | None:
        if not value:
            return None
        try:
            position = int(value.upper().removeprefix("U"))
        except ValueError:
            self.error(line, "position", f"{value!r} is not a U position")
            return None
        if rack is None:
            return position
        if not 1 <= position <= rack.height_u:
            self.error(line, "position", f"U{position} is outside rack {rack}'s 1-{rack.height_u}")
            return None
        key = (rack.pk, position)
        holder = self.occupied.get(key)
        if holder is not None and holder != serial:
            self.error(line, "position", f"{rack} U{position} is taken by node {holder}")
        elif key in self.seen_positions:
            self.error(
                line,
                "position",
                f"{rack} U{position} is also given on line {self.seen_positions[key]}",
            )
        else:
            self.seen_positions[key] = line
        return position

    def _macs(self, line: int, value: str, serial: str) -> list[str]:
        macs = []
        for raw in (m.strip() for m in value.split(";")):
            if not raw:
                continue
            mac = raw.lower().replace("-", ":")
            if not MAC.match(mac):
                self.error(line, "macs", f"malformed MAC {raw!r}; expected aa:bb:cc:dd:ee:ff")
                continue
            owner = self.mac_owner.get(mac)
            if owner is not None and owner != serial:
                self.error(line, "macs", f"MAC {mac} belongs to node {owner}")
            elif mac in self.seen_macs:
                self.error(line, "macs", f"MAC {mac} is also given on line {self.seen_macs[mac]}")
            else:
                self.seen_macs[mac] = line
            macs.append(mac)
        return macs

    def conflicts(self, row: EnrollmentRow, node: Node) -> list[str]:
        """Fields in which a re-imported row differs from the node already enrolled."""
        wanted = {
            "sku_id": row.sku.pk,
            "rack_id": row.rack.pk,
            "position": row.position,
            "bmc_address": row.bmc_address,
            "bmc_username": row.bmc_username,
            "hostname": row.hostname,
        }
        names = [f.removesuffix("_id") for f in _COMPARED if getattr(node, f) != wanted[f]]
        if sorted(str(m).lower() for m in node.mac_addresses) != sorted(row.macs):
            names.append("macs")
        if node.bmc_password != row.bmc_password:
            names.append("bmc_password")
        return names


def _is_bmc_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        return False
    return parts.scheme in {"https", "http"} and bool(parts.hostname)


def validate_csv(text: str) -> tuple[list[EnrollmentRow], list[str], list[RowError]]:
    """Validate every row; return the rows to create, the serials already enrolled, the errors."""
    header, raw_rows = _rows(text.lstrip("\ufeff"))
    errors = _check_header(header)
    if errors:
        return [], [], errors
    if not raw_rows:
        return [], [], [RowError(1, "(file)", "the file has a header but no rows")]
    check = _Validator()
    valid: list[EnrollmentRow] = []
    for line, values in raw_rows:
        if len(values) != len(header):
            # Report the count only: shifted columns could put the password anywhere.
            check.error(
                line,
                "(row)",
                f"has {len(values)} values, expected {len(header)} ({len(COLUMNS)} columns)",
            )
            continue
        row = check.row(line, dict(zip(header, values, strict=True)))
        if row is not None:
            valid.append(row)
    to_create, unchanged = [], []
    for row in valid:
        node = check.existing.get(row.serial)
        if node is None:
            to_create.append(row)
            continue
        differs = check.conflicts(row, node)
        if differs:
            check.error(
                row.line,
                "serial",
                f"{row.serial} is already enrolled with a different {', '.join(differs)}; "
                "change it in the admin",
            )
        else:
            unchanged.append(row.serial)
    return to_create, unchanged, sorted(check.errors, key=lambda e: e.line)


def enroll_csv(
    text: str,
    *,
    actor: AbstractBaseUser | None = None,
    actor_label: str = "",
    source: str = "CSV",
) -> EnrollmentReport:
    """Validate the file and, if every row is good, enroll its new nodes in one transaction."""
    to_create, unchanged, errors = validate_csv(text)
    report = EnrollmentReport(errors=errors, unchanged=unchanged)
    if errors:
        logger.info("enrollment from %s refused: %s", source, report.summary())
        return report
    try:
        with transaction.atomic():
            for row in to_create:
                node = Node(
                    serial=row.serial,
                    hostname=row.hostname,
                    sku=row.sku,
                    rack=row.rack,
                    position=row.position,
                    bmc_address=row.bmc_address,
                    bmc_username=row.bmc_username,
                    bmc_password=row.bmc_password,
                    mac_addresses=row.macs,
                )
                node.save()
                record(
                    node,
                    EventKind.ENROLLED,
                    actor=actor,
                    actor_label=actor_label,
                    message=f"Enrolled from {source}, line {row.line}",
                    data={"source": source, "line": row.line},
                )
                report.created.append(row.serial)
    except IntegrityError:
        # Another enrollment took a serial or a position between validation and insert.
        report.created = []
        report.errors = [
            RowError(1, "(file)", "the fleet changed while importing; nothing was imported, retry")
        ]
    logger.info("enrollment from %s: %s", source, report.summary())
    return report
