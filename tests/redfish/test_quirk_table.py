"""docs/redfish.md's per-vendor table is the quirk table: one row each, in the same words."""

from __future__ import annotations

from pathlib import Path

from provisioning.redfish.quirks import QUIRK_TABLE, VENDORS

REDFISH_DOC = Path(__file__).resolve().parents[2] / "docs" / "redfish.md"


def doc_row(row) -> str:
    """How a QuirkRow reads as a line of the document's table."""
    return f"| {row.vendor} | {row.operation} | {row.rule} | {row.source} |"


def test_every_quirk_row_is_in_the_docs_and_every_docs_row_is_a_quirk():
    text = REDFISH_DOC.read_text()
    start = text.index("<!-- quirk-table -->")
    end = text.index("<!-- /quirk-table -->")
    lines = [line for line in text[start:end].splitlines() if line.startswith("| ")][2:]
    assert lines == [doc_row(row) for row in QUIRK_TABLE]


def test_each_row_names_a_known_vendor_and_a_source():
    for row in QUIRK_TABLE:
        assert row.vendor in VENDORS, row
        assert row.source.strip() and row.rule.strip(), row
