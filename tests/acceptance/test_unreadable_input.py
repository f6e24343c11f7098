"""Garbage, truncated and empty input is an error for every parser, never a pass."""

import pytest

from acceptance.parsers import PARSERS

from .sample_files import read

GOOD = {
    "dcgm": "dcgm4_level3_pass.json",
    "nccl": "nccl_allreduce_2node_pass.txt",
    "nvbandwidth": "nvbandwidth_h100_pass.txt",
    "fio": "fio_8x_nvme_pass.json",
    "gpu-burn": "gpu_burn_8x_pass.txt",
    "nvidia-smi": "nvidia_smi_idle_pass.xml",
    "xid": "kern_xid79.log",
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


@pytest.mark.parametrize("tool", sorted(set(GOOD) - {"xid"}))
@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_truncated_output_is_an_error(tool, keep):
    text = read(GOOD[tool])
    result = PARSERS[tool](text[: int(len(text) * keep)])
    assert result.error, f"{tool} accepted its output cut at {keep:.0%}"


def test_other_tools_output_is_an_error():
    for tool in GOOD:
        for other, other_sample in GOOD.items():
            if other != tool:
                assert PARSERS[tool](read(other_sample)).error, f"{tool} read {other}'s output"
