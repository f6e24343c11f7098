"""The NVSwitch gate, added as one row of acceptance.gates: SXids in the kernel log fail a switch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from acceptance.choices import Verdict
from acceptance.gates import GATE_OF_TOOL, NVSWITCH, GateName, judge_gate
from acceptance.profiles import parse_profile
from acceptance.runner import GatePhase
from acceptance.uploads import upload_output
from acceptance.verdicts import SkuFacts
from agent import protocol
from provisioning.core.phases import label_of

from .sample_files import SAMPLES

HGX = SkuFacts(8, 8, 400, 450, 8)
FATAL = (SAMPLES / "real" / "sxid_gpud338_dmesg_iso_12028.log").read_text()
NON_FATAL = (SAMPLES / "real" / "sxid_nvtrust124_nonfatal_22013.log").read_text()
CLEAN = (SAMPLES / "kern_clean.log").read_text()


def test_a_fatal_sxid_fails_the_switch_it_names():
    verdict = judge_gate("nvswitch", {"xid": FATAL}, None, HGX)
    assert verdict.verdict == Verdict.FAIL
    assert [f.part for f in verdict.findings] == ["NVSwitch 1 (PCI 0000:84:00.0)"]
    assert verdict.metrics["sxid"]["events"][0]["sxid"] == 12028


def test_a_non_fatal_sxid_is_a_warning_unless_the_profile_says_otherwise():
    lenient = judge_gate("nvswitch", {"xid": NON_FATAL}, None, HGX)
    assert lenient.verdict == Verdict.PASS and lenient.findings[0].code == "sxid_nonfatal"
    strict = judge_gate("nvswitch", {"xid": NON_FATAL}, {"allow_nonfatal": 0}, HGX)
    assert strict.verdict == Verdict.FAIL
    assert strict.findings[-1].part == "NVSwitch 1 (PCI 0000:02:00.0)"


def test_a_clean_log_passes_and_a_missing_one_is_an_error():
    assert judge_gate("nvswitch", {"xid": CLEAN}, None, HGX).verdict == Verdict.PASS
    missing = judge_gate("nvswitch", {}, None, HGX)
    assert missing.verdict == Verdict.ERROR and missing.error == "no xid output"


def test_the_row_is_all_it_took():
    # Named, labelled, a choice, a profile entry, an upload target and a run phase, from one row.
    assert GateName.NVSWITCH == "nvswitch"
    assert label_of("gate:nvswitch") == "Gate: NVSwitch health (SXid scan)"
    profile = parse_profile(
        "sku: X\nversion: 1.0.0\ngates:\n  - gate: nvswitch\n"
        "    thresholds:\n      allow_nonfatal: 0\n"
    )
    assert profile.spec["gates"] == [{"gate": "nvswitch", "thresholds": {"allow_nonfatal": 0}}]
    assert GATE_OF_TOOL["sxid"] == "nvswitch"
    runs = NVSWITCH.runs(SimpleNamespace(), NVSWITCH.defaults)
    assert {r["tool"] for r in runs} <= set(protocol.TOOLS)
    assert GatePhase(NVSWITCH).name == "gate:nvswitch"


@pytest.mark.django_db
def test_an_uploaded_sxid_scan_is_filed_under_the_nvswitch_gate(node, alice):
    result = upload_output(node, "sxid", FATAL, actor=alice)
    assert (result.gate, result.verdict) == ("nvswitch", Verdict.FAIL)
