"""The manifest's measured-boot golden values: validated like every field, errors by line."""

from __future__ import annotations

import pytest

from fleet.documents import DocumentInvalid
from fleet.manifests import parse_manifest
from fleet.measured_boot import MEASUREMENTS, Selector, selector_of
from tests import factories

KERNEL = "7b" * 32
SECTION = f"""
attestation:
  bank: sha256
  pcrs: [0, 4, 7, 9, 14]
  measurements:
    kernel:
      digests: ["{KERNEL}"]
      count: 1
    mok:
      pcr: 14
      event_types: [EV_IPL]
      match: "^MokList"
      digests: ["0x{"AB" * 32}"]
"""


def with_section(section: str) -> str:
    return factories.sample_manifest_yaml() + section


def messages(text: str) -> list[str]:
    with pytest.raises(DocumentInvalid) as excinfo:
        parse_manifest(text)
    return excinfo.value.messages()


def test_golden_values_are_parsed_into_the_spec():
    spec = parse_manifest(with_section(SECTION)).spec["attestation"]
    assert spec == {
        "bank": "sha256",
        "pcrs": [0, 4, 7, 9, 14],
        "measurements": {
            "kernel": {"digests": [KERNEL], "count": 1},
            "mok": {"pcr": 14, "event_types": ["EV_IPL"], "match": "^MokList",
                    "digests": ["ab" * 32]},
        },
    }  # fmt: skip


def test_a_manifest_without_golden_values_has_no_attestation_section():
    assert "attestation" not in parse_manifest(factories.sample_manifest_yaml()).spec


@pytest.mark.parametrize(
    "change, expected",
    [
        ("bank: sha256", "attestation.bank: unknown PCR bank 'md5'"),
        ("pcrs: [0, 4, 7, 9, 14]", "attestation.pcrs.1: must be a PCR index 0-23"),
        (f'digests: ["{KERNEL}"]', "attestation.measurements.kernel.digests: 'abc' is not a "
         "sha256 digest (64 hex)"),
        ("      pcr: 14\n", "attestation.measurements.mok.pcr: 'mok' is not one of"),
        ('match: "^MokList"', "attestation.measurements.mok.match: is not a regular expression"),
        ("count: 1", "attestation.measurements.kernel.count: must be a positive number"),
    ],
)  # fmt: skip
def test_each_mistake_names_its_line_and_field(change, expected):
    wrong = {
        "bank: sha256": "bank: md5",
        "pcrs: [0, 4, 7, 9, 14]": "pcrs: [0, 24, 7, 9, 14]",
        f'digests: ["{KERNEL}"]': 'digests: ["abc"]',
        "      pcr: 14\n": "",
        'match: "^MokList"': 'match: "(unclosed"',
        "count: 1": "count: 0",
    }[change]
    text = with_section(SECTION.replace(change, wrong))
    found = messages(text)
    assert any(expected in m for m in found), found
    assert all(m.startswith("line ") for m in found)


def test_a_measurement_in_a_pcr_the_quote_leaves_out_is_refused():
    text = with_section(SECTION.replace("pcrs: [0, 4, 7, 9, 14]", "pcrs: [0, 4, 7, 14]"))
    assert any("kernel: is measured in PCR 9, which attestation.pcrs does not quote" in m
               for m in messages(text))  # fmt: skip


def test_a_measurement_without_digests_is_refused():
    text = with_section(SECTION.replace(f'digests: ["{KERNEL}"]', "digests: []"))
    assert any("record them from a node" in m for m in messages(text))


def test_selectors_take_the_manifests_fields_over_the_table():
    assert selector_of("kernel", {}) == MEASUREMENTS["kernel"]
    own = selector_of("kernel", {"pcr": 4, "event_types": ["EV_EFI_BOOT_SERVICES_APPLICATION"]})
    assert own.pcr == 4 and own.match == MEASUREMENTS["kernel"].match
    assert Selector(9, ("EV_IPL",), r"vmlinuz").selects(9, "EV_IPL", "/boot/VMLINUZ-6.1")
    assert not Selector(9).selects(9, "EV_NO_ACTION", "")
