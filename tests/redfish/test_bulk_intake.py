"""Enrolling many BMCs at once (issue 32's intake): a targets file read whole, then a few BMCs
read side by side against real lab BMCs; one BMC's failure is its own line, never the others'."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from fleet.models import Component, Node, Rack, Site
from lab.bench_intake import rack_name, targets_csv
from lab.enrollment import lab_sku
from provisioning.intake.bulk import enroll_targets, read_targets

# Threads enroll with their own database connections: they must see committed rows.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

SECRET = "s3cret-never-shown"


def _racks(nodes: int) -> None:
    site, _ = Site.objects.get_or_create(name="intake")
    for index in range(0, nodes, 32):
        Rack.objects.get_or_create(site=site, name=rack_name("rack", index))


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out).writerows(
        [["bmc_address", "bmc_username", "bmc_password", "sku", "rack", "position"], *rows]
    )
    return out.getvalue()


def test_a_hall_is_enrolled_a_few_at_a_time_and_a_dead_bmc_is_its_own_failure(hall):
    _racks(len(hall.bmcs))
    text = targets_csv(hall.inventory(), "intake", "rack")
    # A fourth row whose BMC does not answer (nothing listens on port 1).
    text += f"https://127.0.0.1:1,admin,{SECRET},{lab_sku('dell').name},intake/rack-001,9\n"
    targets, errors = read_targets(text)
    assert errors == [] and len(targets) == 4
    seen = []
    report = enroll_targets(
        targets, concurrency=3, timeout=2, on_outcome=lambda o, done, total: seen.append(done)
    )
    assert sorted(seen) == [1, 2, 3, 4]
    assert 1 < report.most_in_flight <= 3
    assert [o.serial for o in report.enrolled] == [bmc.node.serial for bmc in hall.bmcs]
    assert [o.line for o in report.failed] == [5]
    assert "127.0.0.1:1" in report.failed[0].bmc_address and report.failed[0].error
    assert SECRET not in report.failed[0].error
    assert Node.objects.count() == 3
    # Each node came with its parts, read over Redfish.
    assert Component.objects.filter(node__serial=hall.bmc(0).node.serial).count() > 10
    assert "3 of 4 BMC(s) enrolled (3 new), 1 failed" in report.summary()


def test_enrolling_the_same_hall_again_creates_nothing(hall):
    _racks(len(hall.bmcs))
    targets, _ = read_targets(targets_csv(hall.inventory(), "intake", "rack"))
    enroll_targets(targets, concurrency=2)
    again = enroll_targets(targets, concurrency=2)
    assert len(again.enrolled) == 3 and not any(o.created for o in again.outcomes)
    assert Node.objects.count() == 3


def test_a_file_with_a_broken_row_enrolls_nothing_and_names_every_bad_line(hall):
    _racks(3)
    sku = lab_sku("dell").name
    text = _csv(
        [
            [hall.bmc(0).https_url, "admin", SECRET, sku, "intake/rack-001", "1"],
            ["ftp://10.0.0.1", "admin", SECRET, sku, "intake/rack-001", "2"],
            [hall.bmc(1).https_url, "", SECRET, "no-such-sku", "intake/nowhere", "x"],
            [hall.bmc(0).https_url, "admin", SECRET, sku, "intake/rack-001", "3"],
            ["https://10.0.0.9", "admin"],
        ]
    )
    targets, errors = read_targets(text)
    assert targets == []
    found = {(e.line, e.field) for e in errors}
    assert {(3, "bmc_address"), (4, "bmc_username"), (4, "sku"), (4, "rack")} <= found
    assert {(4, "position"), (5, "bmc_address"), (6, "row")} <= found
    assert all(SECRET not in str(e) for e in errors)


def test_a_header_without_the_columns_is_refused():
    _, errors = read_targets("bmc,user\nhttps://x,admin\n")
    assert len(errors) == 1 and errors[0].line == 1
    assert "missing bmc_address" in errors[0].message and "unknown bmc, user" in errors[0].message


def test_the_command_reports_failures_by_line_and_writes_json(hall, tmp_path, capsys):
    _racks(3)
    text = targets_csv(hall.inventory(), "intake", "rack")
    text += f"https://127.0.0.1:1,admin,{SECRET},{lab_sku('dell').name},intake/rack-001,9\n"
    targets = tmp_path / "targets.csv"
    targets.write_text(text)
    out = tmp_path / "report.json"
    with pytest.raises(CommandError, match="3 of 4 BMC"):
        call_command(
            "enroll_bmcs", str(targets), "--concurrency", "2", "--timeout", "2", "--json", str(out)
        )
    captured = capsys.readouterr()
    assert "line 5: https://127.0.0.1:1" in captured.err
    assert SECRET not in captured.out + captured.err + out.read_text()
    report = json.loads(out.read_text())
    assert (report["enrolled"], report["failed"], report["concurrency"]) == (3, 1, 2)


def test_the_command_refuses_a_bad_file_before_enrolling(tmp_path):
    targets = tmp_path / "targets.csv"
    targets.write_text(_csv([["not-a-url", "admin", SECRET, "", "", ""]]))
    with pytest.raises(CommandError, match="nothing was enrolled"):
        call_command("enroll_bmcs", str(targets))
    with pytest.raises(CommandError, match="between 1 and"):
        call_command("enroll_bmcs", str(targets), "--concurrency", "0")
    assert Node.objects.count() == 0
