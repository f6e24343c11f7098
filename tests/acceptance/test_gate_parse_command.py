"""`manage.py gate_parse TOOL FILE`: JSON on stdout, non-zero exit when the output cannot be judged."""

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from .sample_files import SAMPLES

ROOT = Path(__file__).resolve().parents[2]


def run(tool: str, name: str) -> dict:
    out = StringIO()
    call_command("gate_parse", tool, str(SAMPLES / name), stdout=out)
    return json.loads(out.getvalue())


def test_prints_tool_version_metrics_and_findings_naming_the_part():
    payload = run("dcgm", "dcgm4_level3_fail_gpu1.json")
    assert set(payload) >= {"tool", "version", "metrics", "findings", "error"}
    assert (payload["tool"], payload["version"], payload["error"]) == ("dcgm", "4.2.3", None)
    assert payload["findings"][0]["part"] == "GPU 1"
    assert payload["findings"][0]["part_serial"] == "1654923004478"


@pytest.mark.parametrize(
    "tool,name",
    [
        ("nccl", "nccl_allreduce_2node_pass.txt"),
        ("nvbandwidth", "nvbandwidth_h100_pass.txt"),
        ("fio", "fio_8x_nvme_pass.json"),
        ("gpu-burn", "gpu_burn_gpu2_faulty_exit0.txt"),
        ("nvidia-smi", "nvidia_smi_load_swpowercap.xml"),
        ("xid", "kern_xid79.log"),
        ("imex", "real/imex_N_570.00_jpsnips_gh200_2_nodes_ready.txt"),
    ],
)
def test_every_tool(tool, name):
    assert run(tool, name)["error"] is None


def test_unreadable_output_prints_the_reason_and_fails(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("gate_parse", "nccl", str(empty), stdout=out)
    assert json.loads(out.getvalue())["error"] == "empty output"
    assert raised.value.returncode == 2


def test_exit_code_from_a_shell():
    manage = [sys.executable, str(ROOT / "manage.py"), "gate_parse"]
    good = subprocess.run(
        manage + ["xid", str(SAMPLES / "kern_clean.log")], capture_output=True, text=True, cwd=ROOT
    )
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["tool"] == "xid"
    bad = subprocess.run(
        manage + ["gpu-burn", str(SAMPLES / "gpu_burn_killed_midrun.txt")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bad.returncode != 0
    assert "truncated" in json.loads(bad.stdout)["error"]


def test_unknown_tool_is_refused():
    with pytest.raises(CommandError):
        call_command("gate_parse", "iperf", str(SAMPLES / "kern_clean.log"))
