"""CSV enrollment: all rows or none, every bad row reported by line, re-import changes nothing."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from fleet.choices import EventKind, NodeState
from fleet.enrollment_csv import enroll_csv
from fleet.models import Event, Node
from tests import factories

pytestmark = pytest.mark.django_db

HEADER = "serial,sku,site,rack,position,bmc_address,bmc_username,bmc_password,macs,hostname"
GOOD = "\n".join(
    [
        HEADER,
        "SNA001,hgx-h100-8gpu,hall-1,R01,1,https://10.0.0.1,root,pw-one,02:00:00:00:01:01;02:00:00:00:01:02,gpu-001",
        "SNA002,hgx-h100-8gpu,hall-1,R01,5,https://10.0.0.2:8443,root,pw-two,02:00:00:00:02:01,",
        "SNA003,hgx-h100-8gpu,hall-1,R01,U9,https://10.0.0.3,admin,pw-three,02-00-00-00-03-01,gpu-003",
    ]
)


@pytest.fixture
def fleet(sku, rack):
    return rack


def test_a_good_file_imports_every_row_with_an_event_each(fleet, bob):
    report = enroll_csv(GOOD, actor=bob, source="rack.csv")
    assert report.ok and report.created == ["SNA001", "SNA002", "SNA003"]
    nodes = {n.serial: n for n in Node.objects.all()}
    assert nodes["SNA001"].mac_addresses == ["02:00:00:00:01:01", "02:00:00:00:01:02"]
    assert nodes["SNA001"].hostname == "gpu-001"
    assert nodes["SNA003"].position == 9
    assert nodes["SNA003"].mac_addresses == ["02:00:00:00:03:01"]
    assert nodes["SNA002"].bmc_password == "pw-two"
    assert all(n.state == NodeState.ENROLLED for n in nodes.values())
    events = Event.objects.filter(kind=EventKind.ENROLLED).order_by("id")
    assert [(e.node.serial, e.actor, e.data["line"]) for e in events] == [
        ("SNA001", bob, 2),
        ("SNA002", bob, 3),
        ("SNA003", bob, 4),
    ]


def test_reimporting_the_same_file_writes_nothing(fleet):
    enroll_csv(GOOD)
    events = Event.objects.count()
    with CaptureQueriesContext(connection) as queries:
        report = enroll_csv(GOOD)
    assert report.ok and report.created == []
    assert report.unchanged == ["SNA001", "SNA002", "SNA003"]
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []
    assert Event.objects.count() == events
    assert Node.objects.count() == 3


BAD_ROWS = [
    # (row, field, reason fragment)
    (
        "SNB001,hgx-b200-8gpu,hall-1,R01,1,https://10.0.1.1,root,pw,02:00:00:00:10:01",
        "sku",
        "unknown SKU 'hgx-b200-8gpu'",
    ),
    (
        "SNB002,hgx-h100-8gpu,hall-1,R01,43,https://10.0.1.2,root,pw,02:00:00:00:10:02",
        "position",
        "U43 is outside rack hall-1/R01's 1-42",
    ),
    (
        "SNB003,hgx-h100-8gpu,hall-1,R01,top,https://10.0.1.3,root,pw,02:00:00:00:10:03",
        "position",
        "'top' is not a U position",
    ),
    (
        "SNB004,hgx-h100-8gpu,hall-1,R01,4,https://10.0.1.4,,pw,02:00:00:00:10:04",
        "bmc_username",
        "is missing",
    ),
    (
        "SNB005,hgx-h100-8gpu,hall-1,R01,6,https://10.0.1.5,root,pw,02:00:00:00:10",
        "macs",
        "malformed MAC '02:00:00:00:10'",
    ),
    (
        "SNB006,hgx-h100-8gpu,hall-1,R01,7,https://10.0.1.6,root,pw,02:00:00:00:10:06",
        "serial",
        "duplicate serial 'SNB006' (also on line 7)",
    ),
    (
        "SNB007,hgx-h100-8gpu,hall-1,R01,20,https://10.0.1.7,root,pw,02:00:00:00:10:07",
        "position",
        "hall-1/R01 U20 is taken by node SNTAKEN",
    ),
    (
        "SNB008,hgx-h100-8gpu,hall-2,R01,8,https://10.0.1.8,root,pw,02:00:00:00:10:08",
        "site",
        "unknown site 'hall-2'",
    ),
    (
        "SNB009,hgx-h100-8gpu,hall-1,R99,8,https://10.0.1.9,root,pw,02:00:00:00:10:09",
        "rack",
        "unknown rack 'R99' in site 'hall-1'",
    ),
    (
        "SNB010,hgx-h100-8gpu,hall-1,R01,10,ftp://10.0.1.10,root,pw,02:00:00:00:10:10",
        "bmc_address",
        "is not an http(s)://host[:port] URL",
    ),
    (
        "SNB011,hgx-h100-8gpu,hall-1,R01,11,https://10.0.1.11,root,pw,02:00:00:00:10:01",
        "macs",
        "MAC 02:00:00:00:10:01 is also given on line 2",
    ),
    (
        "SNB012,hgx-h100-8gpu,hall-1,R01,1,https://10.0.1.12,root,pw,02:00:00:00:10:12",
        "position",
        "hall-1/R01 U1 is also given on line 2",
    ),
    (
        "SNB013,hgx-h100-8gpu,hall-1,R01,13,https://10.0.1.13,root,pw",
        "(row)",
        "has 8 values, expected 9",
    ),
]


def test_a_file_with_bad_rows_imports_nothing_and_reports_every_one(fleet):
    factories.make_node("SNTAKEN", rack=fleet, position=20)
    good = "SNB006,hgx-h100-8gpu,hall-1,R01,30,https://10.0.1.60,root,pw,02:00:00:00:10:60"
    header = HEADER.removesuffix(",hostname")
    # line 1 header, 2.. one row each; the duplicate serial's first occurrence is good line 7.
    rows = [r for r, _, _ in BAD_ROWS]
    rows.insert(5, good)
    text = "\n".join([header, *rows]) + "\n"
    nodes_before, events_before = Node.objects.count(), Event.objects.count()

    report = enroll_csv(text)

    assert not report.ok and report.created == []
    assert Node.objects.count() == nodes_before
    assert Event.objects.count() == events_before
    reported = {(e.line, e.field): e.message for e in report.errors}
    expected_lines = [2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15]
    for line, (_row, field, fragment) in zip(expected_lines, BAD_ROWS, strict=True):
        assert fragment in reported.get((line, field), ""), (line, field, reported)
    assert report.bad_lines() == expected_lines
    assert "13 bad row(s)" in report.summary() and "nothing was imported" in report.summary()


def test_a_row_with_the_wrong_number_of_values_never_echoes_them(fleet):
    text = HEADER + "\nSNC001,hgx-h100-8gpu,hall-1,R01,1,https://10.0.0.1,root,hunter2-secret\n"
    report = enroll_csv(text)
    assert [str(e) for e in report.errors] == [
        "line 2: (row): has 8 values, expected 10 (10 columns)"
    ]


def test_a_header_missing_columns_is_refused(fleet):
    report = enroll_csv("serial,sku,site\nSN1,hgx-h100-8gpu,hall-1\n")
    assert [e.line for e in report.errors] == [1]
    assert "missing column(s): rack, position" in report.errors[0].message


def test_an_empty_file_is_refused(fleet):
    assert (
        str(enroll_csv("").errors[0]) == "line 1: (file): the file is empty; expected a header row"
    )
    assert "no rows" in str(enroll_csv(HEADER + "\n").errors[0])


def test_line_numbers_count_blank_lines_and_quoted_newlines(fleet):
    text = (
        HEADER
        + "\n\n"
        + 'SND001,hgx-h100-8gpu,hall-1,R01,2,https://10.0.0.1,root,"multi\nline",02:00:00:00:0d:01,\n'
        + "SND002,nope,hall-1,R01,3,https://10.0.0.2,root,pw,02:00:00:00:0d:02,\n"
    )
    report = enroll_csv(text)
    assert [(e.line, e.field) for e in report.errors] == [(5, "sku")]


def test_a_reimport_with_different_values_is_refused(fleet):
    enroll_csv(GOOD)
    changed = GOOD.replace(
        "SNA002,hgx-h100-8gpu,hall-1,R01,5,", "SNA002,hgx-h100-8gpu,hall-1,R01,6,"
    )
    changed = changed.replace("pw-three", "pw-rotated")
    report = enroll_csv(changed)
    messages = [str(e) for e in report.errors]
    assert messages == [
        "line 3: serial: SNA002 is already enrolled with a different position; change it in the admin",
        "line 4: serial: SNA003 is already enrolled with a different bmc_password; change it in the admin",
    ]
    assert "pw-rotated" not in " ".join(messages)
    assert Node.objects.get(serial="SNA002").position == 5


def test_the_command_enrolls_a_good_file(fleet, tmp_path):
    path = tmp_path / "rack.csv"
    path.write_text(GOOD)
    out = io.StringIO()
    call_command("enroll_csv", str(path), stdout=out)
    assert "3 node(s) enrolled, 0 already enrolled" in out.getvalue()
    assert Node.objects.count() == 3
    assert Event.objects.filter(kind=EventKind.ENROLLED).first().actor_label == "enroll_csv"


def test_the_command_lists_every_bad_row_and_fails(fleet, tmp_path):
    path = tmp_path / "rack.csv"
    path.write_text(
        GOOD.replace("hgx-h100-8gpu,hall-1,R01,5", "hgx-x,hall-1,R01,5").replace(
            "R01,U9", "R01,U99"
        )
    )
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("enroll_csv", str(path), stderr=err)
    assert err.getvalue().splitlines() == [
        "line 3: sku: unknown SKU 'hgx-x'",
        "line 4: position: U99 is outside rack hall-1/R01's 1-42",
    ]
    assert not Node.objects.exists()


def test_the_command_reports_a_missing_file(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        call_command("enroll_csv", str(tmp_path / "nope.csv"))


def _upload(client, text: str, name: str = "rack.csv"):
    upload = io.BytesIO(text.encode())
    upload.name = name
    return client.post(reverse("admin:fleet_node_enroll_csv"), {"file": upload})


def test_the_admin_changelist_links_to_the_upload_page(client, alice):
    client.force_login(alice)
    html = client.get(reverse("admin:fleet_node_changelist")).content.decode()
    assert reverse("admin:fleet_node_enroll_csv") in html
    assert reverse("admin:fleet_node_enroll") in html


def test_the_admin_upload_enrolls_a_good_file(client, alice, fleet):
    client.force_login(alice)
    response = _upload(client, GOOD)
    assert response.status_code == 302
    assert response.url == reverse("admin:fleet_node_changelist")
    assert Node.objects.count() == 3
    assert Event.objects.filter(kind=EventKind.ENROLLED, actor=alice).count() == 3


def test_the_admin_upload_lists_every_bad_row(client, alice, fleet):
    client.force_login(alice)
    bad = GOOD.replace(",5,", ",55,").replace("02:00:00:00:01:02", "zz:00:00:00:01:02")
    response = _upload(client, bad)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<td>2</td><td>macs</td><td>malformed MAC &#x27;zz:00:00:00:01:02&#x27;" in html
    assert "<td>3</td><td>position</td><td>U55 is outside" in html
    assert "nothing was imported" in html
    assert not Node.objects.exists()


def test_the_upload_checks_the_csrf_token(alice, fleet):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert _upload(client, GOOD).status_code == 403
    assert not Node.objects.exists()
    client.get(reverse("admin:fleet_node_enroll_csv"))
    upload = io.BytesIO(GOOD.encode())
    upload.name = "rack.csv"
    response = client.post(
        reverse("admin:fleet_node_enroll_csv"),
        {"file": upload, "csrfmiddlewaretoken": client.cookies["csrftoken"].value},
    )
    assert response.status_code == 302
    assert Node.objects.count() == 3


def test_an_upload_too_large_is_refused_without_touching_the_disk(
    client, alice, fleet, monkeypatch
):
    monkeypatch.setattr("fleet.admin.MAX_CSV_BYTES", 256)
    spooled = []
    monkeypatch.setattr(
        "django.core.files.uploadhandler.TemporaryFileUploadHandler.new_file",
        lambda *a, **k: spooled.append(a),
    )
    client.force_login(alice)
    response = _upload(client, GOOD)
    assert response.status_code == 200
    assert "The file is larger than 256 bytes." in response.content.decode()
    assert not Node.objects.exists() and spooled == []


def test_a_site_tech_cannot_upload(client, bob, fleet):
    bob.is_staff = True
    bob.save()
    client.force_login(bob)
    assert _upload(client, GOOD).status_code == 403
    assert not Node.objects.exists()
