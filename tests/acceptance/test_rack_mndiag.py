"""The dcgmi mndiag part of the rack-wide verdict (rack_mndiag), on the NVL72 of rack_samples
whose trays reported their host names: a failing GPU fails the rack naming its tray and GPU; a
run that could not complete, no run, and a tray or host the run does not account for are
unknown, never a pass. The mndiag outputs are derived from DCGM's source, not captured
(samples/mndiag/README.md)."""

import json
from dataclasses import replace

import pytest

from acceptance.parsers.base import Severity
from acceptance.profiles import parse_profile, rack_gates_of
from acceptance.rack_mndiag import UNKNOWN, judge
from agent.tool_commands import SIMPLE_COMMANDS, ToolParamsError
from fleet.documents import DocumentInvalid

from . import rack_samples as rs
from .sample_files import read

PASS = read("mndiag/mndiag_4.6.0_18_hosts_pass.derived.json")
FAIL = read("mndiag/mndiag_4.6.0_18_hosts_c07_gpu2_fail.derived.json")
RUNTIME = read("mndiag/mndiag_4.6.0_ssh_runtime_error.derived.json")
CUDA = "CUDA Error : cudaStreamQuery returned an illegal memory access was encountered"


@pytest.fixture(scope="module")
def trays():
    """The 18 trays, each having reported `hostname` as the samples' hosts are named."""
    return [replace(tray, hostname=f"gb200-r07-{tray.name}") for tray in rs.rack()]


def test_a_passing_run_over_every_tray_has_nothing_to_say(trays):
    findings, metrics = judge(trays, PASS, 4, head="c01")
    assert findings == []
    assert metrics == {"required": True, "ran_on": "c01", "status": "Pass", "hosts": 18,
                       "gpus": 72, "failed": []}  # fmt: skip


def test_a_failing_gpu_fails_the_rack_naming_its_tray_and_gpu(trays):
    findings, metrics = judge(trays, FAIL, 4, head="c01")
    [finding] = findings
    assert (finding.part, finding.kind, finding.code) == (
        "tray c07 GPU 2",
        "gpu",
        "mndiag_gpu_failed",
    )
    assert finding.severity == Severity.CRITICAL and finding.code != UNKNOWN
    assert finding.part_serial == rs.gpu_serial(6, 2)  # from the tray's nvidia-smi report
    assert finding.message == (
        f"tray c07 (serial 1820025180006) GPU 2 ({rs.BUS_IDS[2]}, serial {rs.gpu_serial(6, 2)}):"
        f" dcgmi mndiag MNUBERGEMM Fail: {CUDA}; cuBLAS Error : init failed"
    )
    assert metrics["failed"] == ["tray c07 GPU 2"]


def test_a_host_name_reported_as_a_short_name_still_names_the_tray(trays):
    fqdn = [replace(t, hostname=f"{t.hostname}.hall1.example.net") for t in trays]
    [finding] = judge(fqdn, FAIL, 4)[0]
    assert finding.part == "tray c07 GPU 2"


def test_no_result_where_the_profile_requires_one_is_unknown(trays):
    findings, metrics = judge(trays, None, 4, why_missing="tray c01 ran it: its command is lost")
    [finding] = findings
    assert finding.code == UNKNOWN and finding.severity == Severity.CRITICAL
    assert finding.message == (
        "dcgmi mndiag: no result (tray c01 ran it: its command is lost); the rack's profile "
        "requires it"
    )
    assert metrics["status"] is None


def test_a_run_dcgmi_could_not_complete_is_unknown(trays):
    [finding] = judge(trays, RUNTIME, 4, head="c01")[0]
    assert finding.code == UNKNOWN
    assert finding.message.startswith(
        "dcgmi mndiag on tray c01: dcgmi mndiag could not complete the run: Error: Unable to "
        "complete multi-node diagnostic on host localhost."
    )


@pytest.mark.parametrize("cut", [0.2, 0.7])
def test_cut_output_is_unknown(trays, cut):
    [finding] = judge(trays, FAIL[: int(len(FAIL) * cut)], 4, head="c01")[0]
    assert finding.code == UNKNOWN and finding.message.startswith("dcgmi mndiag on tray c01: ")
    assert finding.message.endswith(": the multi-node diagnostic is unknown")


def test_a_tray_the_run_has_no_result_for_is_unknown_and_its_host_unnamed(trays):
    # Tray c18 reported another host name: mndiag's gb200-r07-c18 is no tray, c18 has no result.
    renamed = [*trays[:17], replace(trays[17], hostname="spare-node")]
    findings, _ = judge(renamed, PASS, 4)
    assert sorted((f.part, f.code) for f in findings) == [
        ("host gb200-r07-c18", UNKNOWN),
        ("tray c18", UNKNOWN),
    ]
    assert all(f.severity == Severity.CRITICAL for f in findings)


def test_a_gpu_without_a_result_is_unknown(trays):
    start = PASS.index("\n\t\t\t\t\t\t{", PASS.index('"results"'))
    end = PASS.index("\n\t\t\t\t\t\t{", start + 1)
    text = PASS[:start] + PASS[end:]  # host 10's GPU 0 result left out, counts fixed up
    text = text.replace('"num_entities" : 72', '"num_entities" : 71')
    [finding] = judge(trays, text, 4)[0]
    assert (finding.part, finding.code, finding.kind) == ("tray c11 GPU 0", UNKNOWN, "gpu")
    assert finding.message.endswith("GPU 0 (00000008:01:00.0, serial 1650325001000): dcgmi "
                                    "mndiag has no result for it")  # fmt: skip


def test_a_host_listing_fewer_gpus_than_a_tray_holds_is_unknown(trays):
    findings, _ = judge(trays, PASS, 5)
    assert {(f.part, f.code) for f in findings} == {(f"tray {t}", UNKNOWN) for t in rs.TRAYS}
    assert findings[0].message.endswith("dcgmi mndiag lists 4 of 5 GPUs")


def test_the_agent_runs_mndiag_over_the_hosts_it_is_given():
    hosts = {"hosts": ["172.31.48.81", "172.31.48.98"]}
    assert SIMPLE_COMMANDS["mndiag"](hosts) == [
        "dcgmi", "mndiag", "--hostList", "172.31.48.81;172.31.48.98", "--json",
    ]  # fmt: skip
    assert SIMPLE_COMMANDS["hostname"]({}) == ["hostname"]
    with pytest.raises(ToolParamsError):
        SIMPLE_COMMANDS["mndiag"]({"hosts": []})


def test_a_rack_scale_skus_profile_may_ask_for_mndiag_alone():
    spec = parse_profile('sku: nvl72\nversion: "1.0.0"\nrack_gates: [mndiag]\n').spec
    assert (spec["gates"], rack_gates_of(spec)) == ([], ("mndiag",))
    node = parse_profile('sku: hgx\nversion: "1.0.0"\ngates: [{gate: gpu_health}]\n').spec
    assert "rack_gates" not in node and rack_gates_of(node) == ()


@pytest.mark.parametrize(
    "rack_gates,error",
    [
        ("[mndiag, nccl]", "rack_gates.1: unknown rack gate 'nccl'; expected one of mndiag"),
        ("[mndiag, mndiag]", "rack_gates.1: rack gate 'mndiag' is listed twice"),
        ("[]", "rack_gates: must be a non-empty list of mndiag"),
    ],
)
def test_a_profiles_rack_gates_are_checked(rack_gates, error):
    with pytest.raises(DocumentInvalid) as raised:
        parse_profile(f'sku: nvl72\nversion: "1.0.0"\nrack_gates: {rack_gates}\n')
    assert error in str(raised.value)


def with_run_errors(mpi: str | None = None, global_errors: list | None = None) -> str:
    """The passing run's document, failed as DCGM writes a run that failed with no GPU error."""
    data = json.loads(PASS)
    test = data["test_categories"][0]["tests"][0]
    test["status"] = test["test_summary"]["status"] = "Fail"
    if mpi:
        test["mpi_error"] = {"error_category": "MPI", "warning": mpi}
    data["global_errors"] = (global_errors or []) + (
        [{"error_category": "MPI", "warning": mpi}] if mpi else []
    )
    return json.dumps(data)


def test_an_mpi_failure_with_no_gpu_named_fails_the_rack(trays):
    text = with_run_errors(mpi="Error: MPI exited with code: 1; Check logs: /tmp/a.log, /tmp/b.log")
    [finding] = judge(trays, text, 4, head="c01")[0]
    assert (finding.part, finding.code, finding.severity) == (
        "dcgmi mndiag",
        "mndiag_failed",
        Severity.CRITICAL,
    )
    assert finding.message == (
        "dcgmi mndiag on tray c01: MNUBERGEMM Fail: Error: MPI exited with code: 1; Check logs: "
        "/tmp/a.log, /tmp/b.log"
    )


def test_a_hosts_error_fails_the_rack_naming_its_tray(trays):
    error = {"error_category": 15, "error_id": 44, "error_severity": 4, "host_id": 4,
             "warning": "No hosts detected in mnubergemm output. Expected 18 host(s)."}  # fmt: skip
    [finding] = judge(trays, with_run_errors(global_errors=[error]), 4, head="c01")[0]
    assert (finding.part, finding.code) == ("tray c05", "mndiag_run_error")
    assert finding.message == (
        "tray c05 (serial 1820025180004): dcgmi mndiag error: No hosts detected in mnubergemm "
        "output. Expected 18 host(s)."
    )
