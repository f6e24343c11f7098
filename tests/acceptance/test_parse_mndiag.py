"""`dcgmi mndiag --json`: each host's and GPU's result read from samples written in the shape
DCGM's source gives the output (samples/mndiag/README.md: derived, not captured); a failing GPU
is named by host and GPU with its messages, a run dcgmi could not complete is an error, and
garbage, cut and empty input is an error."""

import pytest

from acceptance.parsers import PARSERS, mndiag

from .sample_files import read

PASS = "mndiag/mndiag_4.6.0_18_hosts_pass.derived.json"
FAIL = "mndiag/mndiag_4.6.0_18_hosts_c07_gpu2_fail.derived.json"
RUNTIME = "mndiag/mndiag_4.6.0_ssh_runtime_error.derived.json"
CUDA = "CUDA Error : cudaStreamQuery returned an illegal memory access was encountered"


def test_the_parser_is_registered():
    assert PARSERS["mndiag"] is mndiag.parse


def test_a_passing_18_host_run_reads_every_host_and_gpu():
    result = mndiag.parse(read(PASS))
    assert result.error is None and result.findings == []
    assert (result.version, result.driver_version) == ("4.6.0", "580.95.05")
    metrics = result.metrics
    assert (metrics["test"], metrics["status"]) == ("MNUBERGEMM", "Pass")
    assert (metrics["num_hosts"], metrics["num_entities"]) == (18, 72)
    assert sorted(metrics["hosts"]) == [f"gb200-r07-c{i:02d}" for i in range(1, 19)]
    assert metrics["hosts"]["gb200-r07-c11"]["host_id"] == 10  # hosts sorted by name
    assert metrics["hosts"]["gb200-r07-c11"]["gpus"] == {
        str(gpu): {"status": "Pass", "serial": None, "warnings": [], "info": []} for gpu in range(4)
    }
    assert {h["status"] for h in metrics["hosts"].values()} == {"Pass"}
    assert metrics["failed_gpus"] == []
    assert (metrics["runtime_error"], metrics["mpi_error"], metrics["global_errors"]) == (
        None,
        None,
        [],
    )


def test_one_failing_gpu_is_named_by_host_and_gpu_with_its_messages():
    result = mndiag.parse(read(FAIL))
    assert result.error is None
    assert result.metrics["status"] == "Fail"
    assert result.metrics["failed_gpus"] == ["gb200-r07-c07 GPU 2"]
    host = result.metrics["hosts"]["gb200-r07-c07"]
    assert (host["host_id"], host["status"]) == (6, "Fail")
    assert host["gpus"]["2"]["warnings"] == [f"{CUDA}; cuBLAS Error : init failed"]
    assert host["gpus"]["3"]["status"] == "Pass"
    assert result.metrics["hosts"]["gb200-r07-c08"]["status"] == "Pass"
    [finding] = result.findings
    assert (finding.part, finding.kind, finding.code, finding.severity) == (
        "gb200-r07-c07 GPU 2",
        "gpu",
        "mndiag_gpu_failed",
        "critical",
    )
    assert finding.message == (
        f"gb200-r07-c07 GPU 2: MNUBERGEMM Fail: {CUDA}; cuBLAS Error : init failed"
    )


def test_a_run_dcgmi_could_not_complete_is_an_error_saying_why():
    result = mndiag.parse(read(RUNTIME))
    assert result.error == (
        "dcgmi mndiag could not complete the run: Error: Unable to complete multi-node "
        "diagnostic on host localhost. Return: (An SSH connection to a remote hostengine "
        "failed) -61"
    )
    assert result.metrics["hosts"] == {} and result.metrics["num_hosts"] == 0
    assert result.metrics["runtime_error"].endswith("failed) -61")


def test_an_mpi_failure_without_a_gpu_error_fails_the_run():
    # What HelperJsonAddTest and HelperJsonAddErrors write when MPI exits non-zero and no
    # GPU reported an error: the test's mpi_error, repeated in global_errors.
    text = read(PASS).replace('"status" : "Pass",\n\t\t\t\t\t"test_summary"', (
        '"mpi_error" : \n\t\t\t\t\t{\n\t\t\t\t\t\t"error_category" : "MPI",\n'
        '\t\t\t\t\t\t"warning" : "Error: MPI exited with code: 1"\n\t\t\t\t\t},\n'
        '\t\t\t\t\t"status" : "Fail",\n\t\t\t\t\t"test_summary"'
    )).rstrip().removesuffix("}") + (
        ',\n\t"global_errors" : \n\t[\n\t\t{\n\t\t\t"error_category" : "MPI",\n'
        '\t\t\t"warning" : "Error: MPI exited with code: 1"\n\t\t}\n\t]\n}\n'
    )  # fmt: skip
    result = mndiag.parse(text)
    assert result.error is None
    assert result.metrics["mpi_error"] == "Error: MPI exited with code: 1"
    assert result.metrics["global_errors"] == []  # the same MPI error, kept once
    [finding] = result.findings
    assert (finding.part, finding.code) == ("mndiag", "mndiag_failed")
    assert finding.message == "MNUBERGEMM Fail: Error: MPI exited with code: 1"


def test_a_gpu_not_run_is_no_pass_and_a_warn_passes_with_a_warning():
    text = read(PASS)
    first = text.index('"status" : "Pass"', text.index('"results"'))
    second = text.index('"status" : "Pass"', first + 1)
    text = (
        text[:first] + '"status" : "Skip"' + text[first + 17 : second] + '"status" : "Warn"'
        + text[second + 17 :]
    )  # fmt: skip
    result = mndiag.parse(text)
    assert result.error is None
    codes = sorted((f.code, f.severity) for f in result.findings)
    assert codes == [("mndiag_gpu_not_run", "warning"), ("mndiag_gpu_warned", "warning")]


@pytest.mark.parametrize("keep", [0.05, 0.3, 0.6, 0.95, 0.999])
@pytest.mark.parametrize("name", [PASS, FAIL, RUNTIME])
def test_cut_output_is_an_error(name, keep):
    text = read(name)
    assert mndiag.parse(text[: int(len(text) * keep)]).error


def test_a_host_or_a_result_left_out_is_an_error():
    text = read(PASS)
    start = text.index("\n\t\t{", text.index('"hosts"'))
    end = text.index("\n\t\t{", start + 1)
    assert mndiag.parse(text[:start] + text[end:]).error == "lists 17 of 18 hosts (cut?)"
    result = text.index("\n\t\t\t\t\t\t{", text.index('"results"'))
    after = text.index("\n\t\t\t\t\t\t{", result + 1)
    assert mndiag.parse(text[:result] + text[after:]).error == ("results for 71 of 72 GPUs (cut?)")


@pytest.mark.parametrize(
    "text,error",
    [
        ("", "empty output"),
        ("  \n", "empty output"),
        ("\x00\x01", "binary data, not tool output"),
        ("Error: unrecognized command 'mndiag'\n", "no JSON object in the output"),
        ('{"DCGM Diagnostic": {"test_categories": []}}', "dcgmi diag output (one node)"),
        ('{"hello": 1}', "not dcgmi mndiag JSON"),
        ('{"DCGM Diagnostic": "DCGM Multi-Node Diagnostic"}', "no metadata"),
        (
            '{"DCGM Diagnostic": "DCGM Multi-Node Diagnostic", "metadata": {"num_hosts": 2}}',
            "no multi-node test results",
        ),
    ],
)
def test_garbage_and_empty_input_is_an_error(text, error):
    result = mndiag.parse(text)
    assert result.error and error in result.error


def test_an_unknown_status_word_is_an_error():
    text = read(FAIL).replace('"status" : "Fail",\n\t\t\t\t\t\t\t"warnings"', (
        '"status" : "Broken",\n\t\t\t\t\t\t\t"warnings"'))  # fmt: skip
    assert mndiag.parse(text).error == "malformed dcgmi mndiag JSON: unknown status 'Broken'"


def test_dcgmi_diag_does_not_read_mndiag_output():
    assert PARSERS["dcgm"](read(PASS)).error == (
        "dcgmi mndiag output (the rack's multi-node run), not dcgmi diag"
    )
