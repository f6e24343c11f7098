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


DCGMI_TABLE = "real/nvlink_dcgmi_e_gcm_gpu0_head9_cut.txt"
DCGMI_JSON = "real/nvlink_dcgmi_e_j_gcm_gpu0_pass.json"
BORDER = "+-----------------------------+------------------------------------------------+\n"


def test_dcgmi_error_table_names_the_gpu_and_link_of_each_counter():
    # The real paste stops before the table's closing border (`| head -n 9`): with it back,
    # a link that retrained fails and CRC errors warn, as nvidia-smi's counters do.
    whole = read(DCGMI_TABLE) + BORDER
    assert nvlink.parse(whole).findings == []
    assert nvlink.parse(whole).metrics["gpus"]["0"]["links"]["0"]["recovery_errors"] == 0
    bad = whole.replace("| -> Recovery Error           | 0 ", "| -> Recovery Error           | 3 ")
    bad = bad.replace("| -> CRC FLIT Error           | 0 ", "| -> CRC FLIT Error           | 9 ")
    found = {(f.part, f.severity, f.code, f.message) for f in nvlink.parse(bad).findings}
    assert found == {
        ("GPU 0 link 0", Severity.CRITICAL, "nvlink_recovery_errors",
         "GPU 0 link 0: 3 NVLink Recovery errors"),
        ("GPU 0 link 0", Severity.WARNING, "nvlink_crc_errors",
         "GPU 0 link 0: 9 NVLink CRC FLIT errors"),
    }  # fmt: skip


def test_dcgmi_error_reports_cut_or_garbled_are_errors():
    table = read(DCGMI_TABLE)
    assert "no closing border" in nvlink.parse(table).error
    cut_in_link = table[: table.index("| -> Replay Error")] + BORDER
    assert "only some error counters" in nvlink.parse(cut_in_link).error
    text = read(DCGMI_JSON)
    assert "not JSON" in nvlink.parse(text[:-40]).error
    assert "no 'NVLINK Error Counts'" in nvlink.parse('{"body": {}, "header": []}').error


def test_a_counter_dcgmi_does_not_support_is_not_read_and_not_a_finding():
    text = read(DCGMI_JSON).replace('"Replay Error": {"value": "0"}', '"Replay Error": {"value": "Not Supported"}', 1)  # fmt: skip
    result = nvlink.parse(text)
    assert result.error is None and result.findings == []
    assert result.metrics["gpus"]["0"]["links"]["0"]["replay_errors"] is None
