"""The rack-wide NVLink fabric verdict: a healthy NVL72 passes; each seeded fault fails naming the
exact tray, GPU or link; a tray or GPU that reported nothing is unknown, never a pass.

The rack is built from real captures (rack_samples says which and what is changed: the 72 GPUs
are one real GPU block replicated with per-tray bus ids, serials and UUIDs).
"""

import re

import pytest

from acceptance.choices import Verdict
from acceptance.parsers import PARSERS
from acceptance.parsers.base import Severity
from acceptance.rack_fabric import NVL72, DomainShape, TrayReport, judge_rack_fabric

from . import rack_samples as rs

# A GPU the fabric manager has not registered, as real 580 nodes print it (NVIDIA/gpu-operator
# #2511, "fabric in progress in logs of one of the nodes").
IN_PROGRESS = {
    "State": "In Progress", "Status": "N/A", "CliqueId": "N/A", "ClusterUUID": "N/A",
    "Summary": "N/A", "Bandwidth": "N/A", "Route Recovery in progress": "N/A",
    "Route Unhealthy": "N/A", "Access Timeout Recovery": "N/A", "Incorrect Configuration": "N/A",
}  # fmt: skip


def critical(verdict):
    return {(f.part, f.code) for f in verdict.findings if f.severity == Severity.CRITICAL}


def only_finding(verdict):
    [finding] = verdict.findings
    return finding


def test_a_healthy_nvl72_passes_as_one_domain():
    verdict = judge_rack_fabric(rs.rack(), NVL72)
    assert verdict.verdict == Verdict.PASS, verdict.findings
    assert verdict.findings == []
    assert verdict.metrics["trays"] == {"expected": 18, "reported": 18}
    assert verdict.metrics["gpus_in_domain"] == 72
    assert verdict.metrics["domain"] == {f"{rs.CLUSTER}/{rs.CLIQUE}": 72}
    assert verdict.metrics["link_gbps_expected"] == 53.125


def test_one_gpu_in_another_clique_fails_naming_tray_gpu_bus_and_serial():
    smi = rs.smi_report(6, {2: {"CliqueId": "4027"}})
    verdict = judge_rack_fabric(rs.rack({"c07": {"nvidia-smi": smi}}))
    assert verdict.verdict == Verdict.FAIL
    finding = only_finding(verdict)
    assert (finding.part, finding.code) == ("tray c07 GPU 2", "fabric_other_clique")
    assert finding.part_serial == rs.gpu_serial(6, 2)
    assert "tray c07 (serial 1820025180006) GPU 2 (00000018:01:00.0, serial" in finding.message
    assert f"in clique 4027; the domain is clique 4026 of cluster {rs.CLUSTER}" in finding.message
    # The tray alone looks healthy: no single-node read of its report fails it.
    alone = PARSERS["nvidia-smi"](smi)
    assert not [f for f in alone.findings if f.severity == Severity.CRITICAL]


def test_a_gpu_whose_fabric_registration_is_in_progress_fails():
    smi = rs.smi_report(10, {0: IN_PROGRESS})
    verdict = judge_rack_fabric(rs.rack({"c11": {"nvidia-smi": smi}}))
    finding = only_finding(verdict)
    assert (finding.part, finding.code) == ("tray c11 GPU 0", "fabric_not_completed")
    assert "00000008:01:00.0" in finding.message and "In Progress" in finding.message
    assert verdict.metrics["gpus_in_domain"] == 71


def test_a_degraded_bandwidth_health_bit_fails_its_gpu():
    rows = {1: {"Bandwidth": "Degraded", "Summary": "Limited Capacity"}}
    verdict = judge_rack_fabric(rs.rack({"c03": {"nvidia-smi": rs.smi_report(2, rows)}}))
    assert verdict.verdict == Verdict.FAIL
    assert critical(verdict) == {("tray c03 GPU 1", "fabric_unhealthy")}
    messages = " / ".join(f.message for f in verdict.findings)
    assert "fabric health bandwidth: Degraded" in messages
    assert "fabric health summary: Limited Capacity" in messages


def test_a_route_unhealthy_bit_or_an_incorrect_configuration_fails():
    rows = {3: {"Route Unhealthy": "True"}, 0: {"Incorrect Configuration": "Incorrect SysGuid"}}
    verdict = judge_rack_fabric(rs.rack({"c09": {"nvidia-smi": rs.smi_report(8, rows)}}))
    assert critical(verdict) == {
        ("tray c09 GPU 3", "fabric_unhealthy"),
        ("tray c09 GPU 0", "fabric_unhealthy"),
    }


def drop_imex_node(text: str, dropped: int) -> str:
    """The IMEX view had `dropped` never been in nodes_config.cfg: its line, row and column gone
    and the nodes after it renumbered, as IMEX numbers the nodes it is configured with."""
    out, nodes = [], re.findall(r"^Node #\d+\s+-\s+(\S+)\s+-\s+(.*)$", text, re.MULTILINE)
    kept = [node for index, node in enumerate(nodes) if index != dropped]
    for line in text.splitlines():
        if line.startswith("Node #"):
            continue
        if line.startswith(" Nodes From"):
            out.extend(f"Node #{i:<3}- {a:<15} - {rest}" for i, (a, rest) in enumerate(kept))
            out.append("")
            out.append(" Nodes From\\To  " + "   ".join(str(i) for i in range(len(kept))))
            continue
        row = re.match(r"^\s+(\d+)\s+((?:C\s*)+)$", line)
        if row:
            if int(row.group(1)) == dropped:
                continue
            cells = row.group(2).split()
            del cells[dropped]
            index = int(row.group(1)) - (int(row.group(1)) > dropped)
            line = f"{index:>8}        " + "   ".join(cells)
        out.append(line)
    return "\n".join(out).replace("Nodes:\n\n", "Nodes:\n") + "\n"


def test_an_imex_peer_missing_fails_naming_its_tray():
    view = drop_imex_node(rs.imex_report(), 5)
    parsed = PARSERS["imex"](view)
    # The view alone is healthy: 17 nodes, all READY and connected.
    assert parsed.error is None and parsed.findings == []
    assert len(parsed.metrics["nodes"]) == 17
    verdict = judge_rack_fabric(rs.rack({name: {"imex": view} for name in rs.TRAYS}))
    assert verdict.verdict == Verdict.FAIL
    assert critical(verdict) == {
        ("IMEX domain", "imex_peer_missing"),
        ("tray c06", "imex_peer_missing"),
    }
    messages = [f.message for f in verdict.findings]
    assert "IMEX domain lists 17 of 18 compute trays: tray c06 missing (as every tray see it)" in (
        messages
    )
    assert "tray c06 (172.31.50.44) is not in the IMEX domain's node list" in messages[1]


def test_an_imex_peer_unavailable_is_named_once_as_its_tray():
    text = rs.imex_report().replace(
        "Node #5   - 172.31.50.44    - READY               ",
        "Node #5   - 172.31.50.44    - UNAVAILABLE         ",
    )
    rows = text.splitlines()
    for number, line in enumerate(rows):
        row = re.match(r"^(\s+)(\d+)(\s+)((?:C\s*)+)$", line)
        if row:
            cells = row.group(4).split()
            cells = ["N" if 5 in (int(row.group(2)), j) and int(row.group(2)) != j else c
                     for j, c in enumerate(cells)]  # fmt: skip
            rows[number] = row.group(1) + row.group(2) + row.group(3) + "   ".join(cells)
    view = "\n".join(rows).replace("Domain State: UP", "Domain State: DEGRADED") + "\n"
    verdict = judge_rack_fabric(rs.rack({name: {"imex": view} for name in rs.TRAYS}))
    assert critical(verdict) == {
        ("IMEX node #5 (172.31.50.44, tray c06)", "imex_node_not_ready"),
        ("IMEX node #5 (172.31.50.44, tray c06)", "imex_node_unreachable"),
        ("IMEX domain", "imex_domain_down"),
    }


def test_a_link_down_or_slow_fails_naming_tray_gpu_and_link():
    links = {(3, 9): "<inactive>"}
    slow = {(0, 4): "26.562 GB/s"}
    verdict = judge_rack_fabric(
        rs.rack({"c14": {"nvlink": rs.nvlink_report(13, links)},
                 "c02": {"nvlink": rs.nvlink_report(1, slow)}})
    )  # fmt: skip
    assert critical(verdict) == {
        ("tray c14 GPU 3 link 9", "nvlink_down"),
        ("tray c02 GPU 0 link 4", "nvlink_slow"),
    }
    down = next(f for f in verdict.findings if f.code == "nvlink_down")
    assert down.message == (
        f"tray c14 (serial 1820025180013) GPU 3 (00000019:01:00.0, serial "
        f"{rs.gpu_serial(13, 3)}) link 9: NVLink inactive"
    )


def test_a_gpu_with_fewer_links_than_the_domain_expects_fails():
    report = rs.nvlink_report(4)
    cut = "\n".join(line for line in report.splitlines() if line != "         Link 17: 53.125 GB/s")
    verdict = judge_rack_fabric(rs.rack({"c05": {"nvlink": cut + "\n"}}))
    assert critical(verdict) == {(f"tray c05 GPU {g}", "nvlink_missing") for g in range(4)}


def test_a_tray_that_reported_nothing_is_unknown_not_a_pass():
    silent = {"nvidia-smi": None, "imex": None, "nvlink": None}
    verdict = judge_rack_fabric(rs.rack({"c18": silent}))
    assert verdict.verdict == Verdict.ERROR
    assert critical(verdict) == {("tray c18", "fabric_unknown")}
    assert "tray c18 (serial 1820025180017): reported nothing" in verdict.error
    assert verdict.metrics["trays"]["reported"] == 17


def test_a_tray_missing_from_the_rack_or_a_gpu_without_fabric_facts_is_unknown():
    trays = rs.rack({"c05": {"nvidia-smi": rs.smi_report(4, without=2)}})[:17]
    verdict = judge_rack_fabric(trays)
    assert verdict.verdict == Verdict.ERROR
    assert critical(verdict) == {("rack", "fabric_unknown"), ("tray c05 GPU 2", "fabric_unknown")}
    assert "17 of 18 compute trays" in verdict.error and "(and 1 more)" in verdict.error


def test_unknowns_beside_a_fault_fail_and_both_are_named():
    smi = rs.smi_report(6, {2: {"CliqueId": "4027"}})
    verdict = judge_rack_fabric(rs.rack({"c07": {"nvidia-smi": smi}, "c08": {"nvlink": None}}))
    assert verdict.verdict == Verdict.FAIL and verdict.error is None
    assert critical(verdict) == {
        ("tray c07 GPU 2", "fabric_other_clique"),
        ("tray c08", "fabric_unknown"),
    }
    assert verdict.metrics["unknown"] == [
        "tray c08 (serial 1820025180007): nvidia-smi nvlink -s not reported: its links are unknown"
    ]


@pytest.mark.parametrize("tool", ["nvidia-smi", "imex", "nvlink"])
def test_an_unreadable_report_is_unknown(tool):
    whole = {"nvidia-smi": rs.smi_report(0), "imex": rs.imex_report(),
             "nvlink": rs.nvlink_report(0)}[tool]  # fmt: skip
    # Cut inside a line ("Link 5: 53.1"): `nvlink -s` has no end marker to miss.
    cut = whole.index("Link 5: 53.125") + 12 if tool == "nvlink" else len(whole) // 2
    verdict = judge_rack_fabric(rs.rack({"c01": {tool: whole[:cut]}}))
    assert verdict.verdict == Verdict.ERROR
    assert critical(verdict) == {("tray c01", "fabric_unknown")}
    assert "unreadable" in verdict.error


def test_an_nvlink_report_cut_between_gpus_leaves_the_rest_unknown():
    whole = rs.nvlink_report(0)
    verdict = judge_rack_fabric(rs.rack({"c01": {"nvlink": whole[: whole.index("GPU 2:")]}}))
    assert verdict.verdict == Verdict.ERROR
    assert critical(verdict) == {("tray c01 GPU 2", "fabric_unknown"),
                                 ("tray c01 GPU 3", "fabric_unknown")}  # fmt: skip


def test_an_hgx_board_with_an_all_zero_cluster_is_in_no_domain():
    rows = {g: {"CliqueId": "0", "ClusterUUID": "00000000-0000-0000-0000-000000000000"}
            for g in range(4)}  # fmt: skip
    verdict = judge_rack_fabric(rs.rack({"c10": {"nvidia-smi": rs.smi_report(9, rows)}}))
    assert critical(verdict) == {(f"tray c10 GPU {g}", "fabric_no_domain") for g in range(4)}


def test_the_shape_and_link_speed_are_parameters():
    nvl36 = DomainShape(trays=9, gpus_per_tray=4, links_per_gpu=18, link_gbps=50.0)
    verdict = judge_rack_fabric(rs.rack()[:9], nvl36)
    # The real links print 53.125 GB/s, above 50: fast enough. The IMEX view lists 18 nodes.
    assert not [f for f in verdict.findings if f.code.startswith("nvlink")]
    faster = DomainShape(link_gbps=100.0)
    slow = judge_rack_fabric(rs.rack(), faster)
    assert len([f for f in slow.findings if f.code == "nvlink_slow"]) == 72 * 18


def test_trays_can_be_given_as_raw_outputs():
    tray = TrayReport.from_outputs("c01", {"nvidia-smi": rs.smi_report(0)}, "S1", "172.31.48.81")
    assert tray.smi is not None and tray.smi.error is None
    assert tray.imex is None and tray.nvlink is None and not tray.silent
