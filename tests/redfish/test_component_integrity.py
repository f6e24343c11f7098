"""ComponentIntegrity read from real captures served by sushy-static: DMTF's SPDM and TPM
reports with their measurements; a BMC whose root links the collection without serving it, and
one that offers none, give no reports; malformed entries are skipped, not crashed on."""

from __future__ import annotations

import shutil

import pytest

from provisioning.redfish import RedfishClient
from provisioning.redfish.integrity import read_report

from .static import CAPTURES, STATIC_BIN, sushy_static

pytestmark = pytest.mark.skipif(
    shutil.which(str(STATIC_BIN)) is None, reason="sushy-static is not installed"
)


def reports_of(capture: str, workdir):
    with sushy_static(CAPTURES / capture, workdir) as url:
        with RedfishClient(url, "reader", "unused", retries=0, allow_plain_http=True) as client:
            return client.component_integrity()


def test_dmtf_mockup_spdm_and_tpm_reports(tmp_path):
    reports = {r.id: r for r in reports_of("dmtf-public-rackmount1", tmp_path)}
    assert sorted(reports) == ["SS-SPDM-0", "SS-SPDM-1", "TPM-0", "USB-Integrity"]
    spdm = reports["SS-SPDM-0"]
    assert (spdm.protocol, spdm.protocol_version) == ("SPDM", "1.1.0")
    assert spdm.target == "/redfish/v1/Chassis/1U/TrustedComponents/AC-RoT0"
    assert spdm.summary.startswith("oylHo8JAT1Rq")
    rom = [m for m in spdm.measurements if m.kind == "ImmutableROM"]
    assert [(m.index, m.algorithm) for m in rom] == [(3, "TPM_ALG_SHA_512")]
    tpm = reports["TPM-0"]
    assert tpm.verification == "Success" and not tpm.verification_failed
    assert {(m.index, m.algorithm) for m in tpm.measurements} == {
        (1, "TPM_ALG_SHA256"),
        (3, "TPM_ALG_SHA256"),
        (1, "TPM_ALG_SHA512"),
        (3, "TPM_ALG_SHA512"),
    }


@pytest.mark.parametrize("capture", ["nvidia-gb200", "supermicro-hgx-sys821ge"])
def test_a_bmc_with_no_component_integrity_served_gives_none(capture, tmp_path):
    # GB200's root links the collection, which the capture does not hold; Supermicro's has none.
    assert reports_of(capture, tmp_path) == []


def test_malformed_entries_are_skipped():
    report = read_report(
        {
            "Id": "odd",
            "ComponentIntegrityType": "SPDM",
            "SPDM": {
                "MeasurementSet": {
                    "Measurements": [
                        "not an object",
                        {"MeasurementIndex": "7", "Measurement": "AAAA"},
                        {"MeasurementIndex": 2},
                        {"MeasurementIndex": 4, "Measurement": "BBBB"},
                    ]
                },
                "IdentityAuthentication": {"ResponderAuthentication": {"VerificationStatus": 5}},
            },
        }
    )
    assert [(m.index, m.value) for m in report.measurements] == [(4, "BBBB")]
    assert report.verification == "5" and report.enabled
    assert read_report({"ComponentIntegrityType": "TPM", "TPM": "garbage"}).measurements == ()
