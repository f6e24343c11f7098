"""Kernel log XIDs: hardware classes fail, application XIDs do not, 63/94 once ask for a reset."""

from acceptance.parsers import xid
from acceptance.parsers.base import Severity

from .sample_files import read

BUS_IDS = {
    "00000000:18:00.0": {"index": 0, "serial": "1654923004120"},
    "00000000:2A:00.0": {"index": 1, "serial": "1654923004478"},
}


def test_clean_log_has_no_findings():
    result = xid.parse(read("kern_clean.log"))
    assert result.error is None
    assert result.findings == [] and result.metrics["events"] == []


def test_xid_79_is_hardware_and_named_by_the_bus_map():
    result = xid.parse(read("kern_xid79.log"), bus_ids=BUS_IDS)
    assert [f.message for f in result.findings] == ["GPU 1: XID 79 (fallen off the bus)"]
    finding = result.findings[0]
    assert (finding.severity, finding.part_serial) == (Severity.CRITICAL, "1654923004478")
    assert result.metrics["hardware_xids"] == [79]
    assert result.metrics["events"][0]["time_s"] == 31877.100243


def test_without_a_bus_map_the_pci_address_names_the_gpu():
    result = xid.parse(read("kern_xid79.log"))
    assert result.findings[0].part == "GPU at PCI 0000:2a:00"


def test_application_xids_13_31_43_are_not_hardware_faults():
    result = xid.parse(read("kern_app_xids_journal.log"), bus_ids=BUS_IDS)
    assert result.error is None
    assert [e["xid"] for e in result.metrics["events"]] == [13, 13, 31, 43]
    assert {e["class"] for e in result.metrics["events"]} == {"application"}
    assert result.findings == []


def test_xid_63_once_asks_for_a_reset():
    result = xid.parse(read("kern_xid63_once.log"), bus_ids=BUS_IDS)
    assert [f.severity for f in result.findings] == [Severity.RESET_REQUIRED]
    assert result.metrics["reset_required_parts"] == ["GPU 0"]


def test_xid_63_recurring_fails():
    result = xid.parse(read("kern_xid63_recurred.log"), bus_ids=BUS_IDS)
    assert [(f.severity, f.code) for f in result.findings] == [
        (Severity.CRITICAL, "xid_reset_recurred")
    ]
    assert "recurred 2 times" in result.findings[0].message


def test_xid_94_then_95_fails_on_the_95():
    result = xid.parse(read("kern_xid94_then_95.log"), bus_ids=BUS_IDS)
    by_code = {f.code: f for f in result.findings}
    assert by_code["xid_hardware"].message == "GPU 1: XID 95 (uncontained ECC error)"
    assert by_code["xid_reset"].severity == Severity.RESET_REQUIRED


def test_catalog_classes():
    for number in (48, 64, 74, 79, 92, 95, 119, 120, 140):
        assert xid.classify(number) == "hardware"
    assert xid.classify(63) == xid.classify(94) == "reset"
    for number in (13, 31, 43):
        assert xid.classify(number) == "application"
    assert xid.classify(999) == "unknown"


def test_unknown_xid_is_not_waved_through():
    line = "[  10.000000] NVRM: Xid (PCI:0000:18:00): 999, pid=1, name=x, something new\n"
    assert [f.severity for f in xid.parse(line).findings] == [Severity.CRITICAL]


def test_cut_xid_line_is_an_error():
    assert "unreadable Xid line" in xid.parse(read("kern_xid_truncated.log")).error
