"""Garbage, truncated and empty input is an error for every parser, never a pass."""

import pytest

from acceptance.gates import GATE_OF_TOOL
from acceptance.parsers import PARSERS
from acceptance.rack_fabric import RACK_ONLY_TOOLS

from .sample_files import SAMPLES, read

GOOD = {
    "dcgm": "dcgm4_level3_pass.json",
    "nccl": "nccl_allreduce_2node_pass.txt",
    "nvbandwidth": "nvbandwidth_h100_pass.txt",
    "fio": "fio_8x_nvme_pass.json",
    "gpu-burn": "gpu_burn_8x_pass.txt",
    "nvidia-smi": "nvidia_smi_idle_pass.xml",
    "xid": "kern_xid79.log",
    "sxid": "real/sxid_nvtrust124_nonfatal_22013.log",
    "aer": "real/aer_lkml_tegra_r8169_no_timestamp.log",
    "perftest": "real/perftest_issue273_write_bw_postlist_gbits.txt",
    "reference-job": "real/greenlight_reference_job_v1_cpu_small.txt",
    "nvlink": "real/nvlink_dcgmi_s_dcgm198_all_links_down.txt",
    "imex": "real/imex_N_570.172_aws_pcluster_p6e_gb200_18_nodes_ready.txt",
    # Derived from DCGM's source, not captured (samples/mndiag/README.md).
    "mndiag": "mndiag/mndiag_4.6.0_18_hosts_pass.derived.json",
}
# Kernel logs have no end marker: a cut is seen only inside a line (tested below).
LOGS = {"xid", "sxid", "aer"}
# The text forms that share a tool with a JSON or XML form: each is cut like the others.
TEXT_FORMS = {
    "dcgm": "real/dcgmi_text_3.3.3_r2_p4de_pass.txt",
    "nvidia-smi": "real/gpud_nvidia_smi_q_560.35.03.txt",
    "fio": "real/fio_text_3.35_seq_write_nvme1n1.txt",
}
GARBAGE = [
    "",
    "   \n\t\n",
    "\x00\x01\x02\xff binary",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\nSed do eiusmod tempor.\n",
    '{"hello": "world"}',
    "<html><body>502 Bad Gateway</body></html>",
    "[1, 2, 3]",
]


def test_every_tool_has_a_parser():
    assert set(PARSERS) == set(GOOD)


@pytest.mark.parametrize("tool", sorted(GOOD))
@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_is_an_error(tool, text):
    result = PARSERS[tool](text)
    assert result.error, f"{tool} accepted garbage"


@pytest.mark.parametrize("tool", sorted(GOOD))
def test_the_good_sample_reads(tool):
    assert PARSERS[tool](read(GOOD[tool])).error is None


@pytest.mark.parametrize("tool", sorted(set(GOOD) - LOGS))
@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_truncated_output_is_an_error(tool, keep):
    text = read(GOOD[tool])
    result = PARSERS[tool](text[: int(len(text) * keep)])
    assert result.error, f"{tool} accepted its output cut at {keep:.0%}"


@pytest.mark.parametrize("tool", sorted(TEXT_FORMS))
@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_truncated_text_form_is_an_error(tool, keep):
    text = (SAMPLES / TEXT_FORMS[tool]).read_text()
    assert PARSERS[tool](text).error is None
    result = PARSERS[tool](text[: int(len(text) * keep)])
    assert result.error, f"{tool} text accepted its output cut at {keep:.0%}"


@pytest.mark.parametrize("tool", sorted(TEXT_FORMS))
@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_is_an_error_for_text_forms(tool, text):
    assert PARSERS[tool](text).error


@pytest.mark.parametrize("tool,marker", [("sxid", "SXid (PCI:"), ("aer", "AER: Uncorrected")])
def test_a_log_cut_inside_its_event_line_is_an_error(tool, marker):
    text = read(GOOD[tool])
    cut = text.index(marker) + len(marker) - 3
    result = PARSERS[tool](text[:cut])
    assert result.error, f"{tool} accepted a log cut inside its event line"


def test_other_tools_output_is_an_error():
    for tool in GOOD:
        for other, other_sample in GOOD.items():
            # One kernel log feeds the xid, sxid and aer parsers alike.
            if other != tool and not {tool, other} <= LOGS:
                assert PARSERS[tool](read(other_sample)).error, f"{tool} read {other}'s output"


def test_every_parsed_tool_can_be_uploaded_to_a_gate_or_is_judged_rack_wide():
    assert set(GATE_OF_TOOL) | set(RACK_ONLY_TOOLS) == set(PARSERS)
    assert not set(GATE_OF_TOOL) & set(RACK_ONLY_TOOLS)
