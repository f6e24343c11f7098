"""Each GPU's NVLink fabric facts from `nvidia-smi -q` (text and XML), with its index, bus id and
serial; what one node can see wrong of them is a finding on that GPU."""

import re

from acceptance.parsers import nvidia_smi
from acceptance.parsers.base import Severity

from .sample_files import read

H200 = "real/nvidia_smi_q_550.90.12_gls_h200_fabric_completed_zero_cluster.txt"
HGX_535 = "real/gpud_nvidia_smi_q_535.161.08.txt"
H100_580 = "real/greenlight_h100_nvidia_smi_q_580.159.04_p0_idle.txt"
H100_580_XML = "real/greenlight_h100_nvidia_smi_q_x_580.159.04_under_load.xml"


def fabric_rows(text: str, rows: dict[str, str]) -> str:
    """The report with these Fabric rows set (values as other real reports printed them)."""
    for key, value in rows.items():
        text = re.sub(rf"^(\s+{re.escape(key)}\s+: ).*$", lambda m, v=value: m.group(1) + v, text,
                      count=1, flags=re.MULTILINE)  # fmt: skip
    return text


def test_a_real_h200_reports_completed_in_an_all_zero_cluster():
    [gpu] = nvidia_smi.parse(read(H200)).metrics["gpus"]
    assert (gpu["index"], gpu["bus_id"], gpu["serial"]) == (0, "00000000:03:00.0", "1753724031847")
    assert gpu["fabric"] == {
        "state": "Completed",
        "status": "Success",
        "clique_id": 0,
        "cluster_uuid": "00000000-0000-0000-0000-000000000000",
        "health": {"bandwidth": None},
    }


def test_the_535_form_has_state_and_status_only():
    gpus = nvidia_smi.parse(read(HGX_535)).metrics["gpus"]
    assert len(gpus) == 8
    assert {g["fabric"]["state"] for g in gpus} == {"Completed"}
    assert gpus[3]["fabric"]["clique_id"] is None and gpus[3]["fabric"]["health"] == {}


def test_a_filtered_report_has_no_fabric_section_and_na_is_none():
    filtered = nvidia_smi.parse(read("real/greenlight_h100_nvidia_smi_q_d_ecc_580.159.04.txt"))
    assert filtered.metrics["gpus"][0]["fabric"] is None
    [gpu] = nvidia_smi.parse(read(H100_580)).metrics["gpus"]
    assert gpu["fabric"]["state"] is None
    assert set(gpu["fabric"]["health"]) == {
        "summary", "bandwidth", "route_recovery_in_progress", "route_unhealthy",
        "access_timeout_recovery", "incorrect_configuration", "partition_assigned",
    }  # fmt: skip


def test_registration_still_in_progress_warns_its_gpu():
    # The block NVIDIA/gpu-operator#2511 shows on a 580.159.04 node whose fabric never completed.
    text = fabric_rows(read(H100_580), {"State": "In Progress"})
    result = nvidia_smi.parse(text)
    [finding] = result.findings
    assert (finding.part, finding.severity, finding.code) == (
        "GPU 0",
        Severity.WARNING,
        "fabric_not_ready",
    )
    assert finding.part_serial == "1752524018811"
    assert "GPU 0 (00000000:00:06.0): NVLink fabric registration In Progress" in finding.message


def test_completed_with_a_failure_status_fails_its_gpu():
    # As Azure/azhpc-images#506 quotes a node that went back to production unnoticed.
    text = fabric_rows(read(H200), {"Status": "Insufficient Resources"})
    [finding] = nvidia_smi.parse(text).findings
    assert (finding.part, finding.code) == ("GPU 0", "fabric_unhealthy")
    assert finding.severity == Severity.CRITICAL
    assert "registration completed with status 'Insufficient Resources'" in finding.message


def test_an_unhealthy_summary_fails_even_with_full_bandwidth():
    # kubernetes-sigs/dra-driver-nvidia-gpu#626: Completed, Success, clique 2, Summary Unhealthy.
    rows = {"State": "Completed", "Status": "Success", "CliqueId": "2",
            "ClusterUUID": "dc6e40c4-d722-4357-9ba6-5291dd461278", "Summary": "Unhealthy",
            "Bandwidth": "Full"}  # fmt: skip
    result = nvidia_smi.parse(fabric_rows(read(H100_580), rows))
    [finding] = result.findings
    assert finding.message == "GPU 0 (00000000:00:06.0): fabric health summary: Unhealthy"
    assert result.metrics["gpus"][0]["fabric"]["clique_id"] == 2


def test_a_health_word_greenlight_does_not_know_is_a_fault():
    text = fabric_rows(read(H100_580), {"Route Unhealthy": "Maybe"})
    [finding] = nvidia_smi.parse(text).findings
    assert finding.message.endswith("fabric health route unhealthy: Maybe")


def test_the_xml_report_gives_the_same_facts():
    xml = read(H100_580_XML)
    for tag, value in {"state": "Completed", "status": "Success", "cliqueId": "4026",
                       "clusterUuid": "9C6F5AF3-53BF-49B5-A436-B66766C413C3",
                       "bandwidth": "Degraded"}.items():  # fmt: skip
        xml = xml.replace(f"<{tag}>N/A</{tag}>", f"<{tag}>{value}</{tag}>", 1)
    result = nvidia_smi.parse(xml)
    fabric = result.metrics["gpus"][0]["fabric"]
    assert fabric["clique_id"] == 4026
    assert fabric["cluster_uuid"] == "9c6f5af3-53bf-49b5-a436-b66766c413c3"
    assert fabric["health"]["bandwidth"] == "Degraded"
    assert [f.code for f in result.findings] == ["fabric_unhealthy"]


def test_a_grep_of_the_fabric_lines_names_no_gpu_and_is_an_error():
    result = nvidia_smi.parse(
        read("real/nvidia_smi_q_dradriver626_grep_fabric_unhealthy_fragment.txt")
    )
    assert result.error == "not nvidia-smi -q output: no NVSMI LOG banner or GPU section"
