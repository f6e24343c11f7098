"""The CSV export: one row per component, filtered like the list, streamed."""

from __future__ import annotations

import csv
import io

from django.http import StreamingHttpResponse

from console.exports import HEADER
from fleet.models import Component, Node
from tests import factories

from .conftest import BMC_PASSWORD, BMC_USERNAME, client_for


def export(client, **params) -> list[dict[str, str]]:
    response = client.get("/api/v1/nodes/export.csv", params)
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="greenlight-nodes-')
    text = b"".join(response.streaming_content).decode()
    assert BMC_PASSWORD not in text and BMC_USERNAME not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == HEADER if rows else True
    return rows


def test_one_row_per_component_with_the_node_repeated(fleet, dora):
    rows = export(client_for(dora))
    assert len(rows) == 4 * 6
    gpu = next(r for r in rows if r["component_serial"] == "SN-BAD-GPU1")
    assert gpu["serial"] == "SN-BAD"
    assert gpu["site"] == "hall-1" and gpu["rack"] == "R01" and gpu["position"] == "3"
    assert gpu["state"] == "quarantined" and gpu["last_verdict"] == "fail"
    assert gpu["manifest_version"] == "1.0.0"
    assert gpu["component_kind"] == "gpu" and gpu["component_firmware_version"] == "96.00.99.00.01"


def test_export_takes_the_list_filters(fleet, dora):
    rows = export(client_for(dora), state="in_service")
    assert {r["serial"] for r in rows} == {"SN-SERVED"}
    assert export(client_for(dora), state="decommissioned") == []


def test_node_without_components_still_has_a_row(fleet, dora):
    factories.make_node("SN-BARE", rack=fleet["racks"][0], position=30)
    rows = export(client_for(dora), serial="SN-BARE")
    assert len(rows) == 1 and rows[0]["component_kind"] == ""


def test_formula_cells_are_defused(fleet, dora):
    factories.make_node("=HYPERLINK(1)", rack=fleet["racks"][0], position=31)
    rows = export(client_for(dora), serial="=HYPERLINK(1)")
    assert rows[0]["serial"] == "'=HYPERLINK(1)"


# OWASP's CSV-injection list: each of these starts a formula in some spreadsheet.
FORMULA_STARTS = ["=", "+", "-", "@", "\t", "\r"]


def test_every_formula_start_is_defused_in_node_and_component_cells(fleet, dora):
    for position, start in enumerate(FORMULA_STARTS, start=40):
        node = factories.make_node(
            f"SN-FORMULA-{position}", rack=fleet["racks"][0], position=position
        )
        Node.objects.filter(pk=node.pk).update(hostname=f"{start}2+3+cmd|' /C calc'!A0")
        Component.objects.create(node=node, kind="gpu", slot="0", model=f"{start}SUM(A1)")
    rows = export(client_for(dora), q="SN-FORMULA-")
    cells = sorted((r["hostname"], r["component_model"]) for r in rows)
    expected = sorted((f"'{s}2+3+cmd|' /C calc'!A0", f"'{s}SUM(A1)") for s in FORMULA_STARTS)
    assert cells == expected


def test_refused_without_a_role(fleet, charlie):
    assert client_for(charlie).get("/api/v1/nodes/export.csv").status_code == 403
    assert client_for(None).get("/api/v1/nodes/export.csv").status_code == 401
