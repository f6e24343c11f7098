"""dcgmi diag -j: both the 3.x and the 4.x layouts, per-GPU blame, unknown statuses."""

from acceptance.parsers import dcgm
from acceptance.parsers.base import Severity

from .sample_files import read


def test_dcgm3_level3_pass_reads_version_driver_and_level():
    result = dcgm.parse(read("dcgm3_level3_pass.json"))
    assert result.error is None
    assert result.version == "3.3.5"
    assert result.driver_version == "535.161.08"
    assert result.metrics["layout"] == "3.x"
    assert result.metrics["level_inferred"] == 3
    assert result.metrics["gpus"] == list(range(8))
    assert result.findings == []


def test_dcgm3_failure_names_gpu_3_with_serial_once_per_test():
    result = dcgm.parse(read("dcgm3_level3_fail_gpu3.json"))
    assert result.error is None
    assert {f.part for f in result.findings} == {"GPU 3"}
    assert {f.part_serial for f in result.findings} == {"1654123003390"}
    assert sorted(result.metrics["failed_tests"]) == ["diagnostic", "gpu_memory"]
    assert any("double-bit ECC" in f.message for f in result.findings)
    # Skipped stress tests on the failed GPU are not failures of their own.
    assert result.metrics["tests"]["targeted_stress"]["status"] == "pass"


def test_dcgm4_level3_pass():
    result = dcgm.parse(read("dcgm4_level3_pass.json"))
    assert result.error is None
    assert (result.version, result.driver_version) == ("4.2.3", "550.90.07")
    assert result.metrics["layout"] == "4.x"
    assert result.metrics["level_inferred"] == 3
    assert result.findings == []


def test_dcgm4_failure_names_gpu_1_with_serial_from_entity_groups():
    result = dcgm.parse(read("dcgm4_level3_fail_gpu1.json"))
    assert [f.part for f in result.findings] == ["GPU 1"]
    finding = result.findings[0]
    assert finding.part_serial == "1654923004478"
    assert finding.severity == Severity.CRITICAL
    assert "targeted_power" in finding.message and "power cabling" in finding.message


def test_unknown_status_is_not_a_pass():
    result = dcgm.parse(read("dcgm4_unknown_status.json"))
    assert result.error is None
    assert result.metrics["tests"]["memory_bandwidth"]["status"] == "fail"
    assert [f.part for f in result.findings] == ["GPU 1"]
    assert "Not Run" in result.findings[0].message


def test_3x_whole_node_result_is_narrowed_to_the_gpu_its_warning_names():
    text = read("dcgm3_level3_pass.json").replace(
        '"name" : "Persistence Mode",\n                        "results" : [\n                            {\n                                "gpu_ids" : "0,1,2,3,4,5,6,7",\n                                "status" : "Pass"',
        '"name" : "Persistence Mode",\n                        "results" : [\n                            {\n                                "gpu_ids" : "0,1,2,3,4,5,6,7",\n                                "warnings" : [ { "warning" : "Persistence mode for GPU 6 is disabled.", "error_id" : 29 } ],\n                                "status" : "Fail"',
    )
    result = dcgm.parse(text)
    assert [f.part for f in result.findings] == ["GPU 6"]


def test_runtime_error_is_an_error():
    result = dcgm.parse(
        '{"DCGM GPU Diagnostic": {"runtime_error": "Unable to connect to nv-hostengine", "version": "3.3.5"}}'
    )
    assert result.error and "nv-hostengine" in result.error


def test_banner_before_json_is_skipped():
    result = dcgm.parse("Successfully ran diagnostic for group.\n" + read("dcgm4_level3_pass.json"))
    assert result.error is None


def test_a_deployment_error_row_with_no_test_row_fails_the_gpu_it_names():
    # dcgmi stops at deployment and prints only the section's Error row (real quote in
    # samples/real/dcgmi_text_mleng_deployment_error_gpu3_row_remap.txt); here the table is closed.
    text = read("real/dcgmi_text_mleng_deployment_error_gpu3_row_remap.txt") + "+" + "-" * 27 + "+"
    text += "-" * 48 + "+\n"
    result = dcgm.parse(text)
    assert result.error is None
    assert result.metrics["complete"] is True
    assert [(f.part, f.severity) for f in result.findings] == [("GPU 3", Severity.CRITICAL)]
    assert "row remappings are pending" in result.findings[0].message


def test_a_deployment_info_row_naming_gpus_is_not_a_failure():
    text = read("real/dcgmi_text_3.3.8_ncclt264_deployment_info_gpus_memory_fail_all.txt")
    result = dcgm.parse(text)
    assert result.metrics["failed_tests"] == ["memory"]
    assert "deployment" not in result.metrics["tests"]


H200_PERSISTENCE = "real/dcgmi_text_3.1.8_r1_h200x8_persistence_mode_fail_gpus0_5.txt"


def test_a_deployment_row_failing_on_several_gpus_quotes_each_gpu_its_own_message():
    # One Error row joins a message per GPU ("... as root., Persistence mode for GPU 1 ...").
    result = dcgm.parse(read(H200_PERSISTENCE))
    by_part = {f.part: f.message for f in result.findings}
    assert sorted(by_part) == [f"GPU {n}" for n in range(6)]  # dcgmi cut its text in GPU 5's
    assert "Persistence mode for GPU 3 is currently disabled" in by_part["GPU 3"]
    assert "GPU 0" not in by_part["GPU 3"] and "GPU 4" not in by_part["GPU 3"]
    assert by_part["GPU 5"].endswith("requires peristence mod")


def test_a_warning_row_per_gpu_is_quoted_by_that_gpu_alone():
    text = read("real/dcgmi_text_3.3.8_ncclt264_deployment_info_gpus_memory_fail_all.txt")
    by_part = {f.part: f.message for f in dcgm.parse(text).findings}
    assert by_part["GPU 6"].startswith("GPU 6: DCGM memory failed: GPU 6 Error using CUDA API")
    assert all(f"GPU {n} Error" not in by_part["GPU 6"] for n in (0, 1, 2, 3, 4, 5, 7))


def test_a_deployment_failure_cut_short_never_passes():
    text = read(H200_PERSISTENCE)
    before_the_failure = text[: text.index("| Persistence Mode")]
    assert "truncated" in dcgm.parse(before_the_failure).error
    inside_its_error = text[: text.index("GPU 2 is cur")]
    result = dcgm.parse(inside_its_error)
    assert result.metrics["complete"] is False
    assert {f.part for f in result.findings} == {"GPU 0", "GPU 1"}
