"""NVLink reports: the rule names the GPU and the link; what is cut is an error."""

from acceptance.parsers import nvlink
from acceptance.parsers.base import Severity

from .sample_files import read

ERRORS = "real/nvlink_smi_e_mleng_h100_elided_clean.txt"
SPEEDS = "real/nvlink_smi_s_mleng_h100_elided_clean.txt"


def test_a_recovery_error_fails_its_link_and_crc_errors_warn():
    text = read(ERRORS).replace("Link 17: Recovery Errors: 0", "Link 17: Recovery Errors: 2")
    text = text.replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 40")
    found = {(f.part, f.severity, f.code) for f in nvlink.parse(text).findings}
    assert found == {
        ("GPU 0 link 17", Severity.CRITICAL, "nvlink_recovery_errors"),
        ("GPU 0 link 1", Severity.WARNING, "nvlink_crc_errors"),
    }


def test_a_link_trained_slower_than_its_gpu_fails():
    text = read(SPEEDS).replace("Link 17: 26.562 GB/s", "Link 17: 13.281 GB/s")
    [finding] = nvlink.parse(text).findings
    assert (finding.part, finding.code) == ("GPU 0 link 17", "nvlink_slow")


def test_a_report_cut_inside_a_link_is_an_error():
    text = read(ERRORS)
    assert nvlink.parse(text[: text.index("Link 17: CRC")]).error
    assert nvlink.parse(text[: text.index("Link 17: Replay") + len("Link 17: Rep")]).error
