"""The acceptance tools' command lines and the kernel log, run for real where the tool exists here."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from acceptance.parsers import fio as fio_parser
from acceptance.parsers import xid as xid_parser
from agent import install_record as ir
from agent.hardware import HardwareError, SystemHardware
from agent.tool_commands import ToolParamsError, fio_command, kernel_log, nccl_command
from agent.tools import Completed, capture, run

from .recorded import RecordedTools, sample


def test_nccl_runs_on_the_hosts_the_runner_chose():
    cmd = nccl_command({"hosts": ["node-a.ib", "node-b.ib"], "rail": 3})
    assert cmd[:5] == ["mpirun", "--host", "node-a.ib:1,node-b.ib:1", "-np", "2"]
    assert "NCCL_IB_HCA=mlx5_3" in cmd
    all_gpus = nccl_command({"hosts": ["node-a.ib", "node-b.ib"]})
    assert all_gpus[2:5] == ["node-a.ib:8,node-b.ib:8", "-np", "16"]


@pytest.mark.parametrize("params", [{}, {"hosts": []}, {"hosts": ["", ""]}, {"hosts": ["node-a"]}])
def test_nccl_without_peer_hosts_fails_clearly(params):
    with pytest.raises(ToolParamsError, match="needs this node and at least one peer"):
        nccl_command(params)
    hw = SystemHardware(capture=RecordedTools({}).capture)
    with pytest.raises(HardwareError, match="nccl: the runner named"):
        asyncio.run(hw.run_tool("nccl", params, lambda line: None))


def test_every_fio_job_names_its_drive_and_a_read_only_drive_gets_no_write():
    cmd = fio_command([("/dev/nvme0n1", False), ("/dev/nvme1n1", True)])
    jobs = " ".join(cmd).split("--name=")[1:]
    assert [j.split()[0] for j in jobs] == ["read-nvme0n1", "read-nvme1n1", "write-nvme1n1"]
    assert all("--filename=/dev/" in j for j in jobs)


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed on this machine")
def test_real_fio_reports_every_drive_by_its_filename(tmp_path):
    drives = []
    for name in ("nvme0n1", "nvme1n1"):
        path = tmp_path / name
        with open(path, "wb") as disk:
            disk.truncate(32 * 1024 * 1024)
        drives.append(str(path))
    cmd = fio_command([(drives[0], False), (drives[1], True)], runtime_s=1)
    code, output = asyncio.run(run(cmd))
    assert code == 0, output[-500:]
    parsed = fio_parser.parse(output)
    assert parsed.error is None
    devices = parsed.metrics["devices"]
    assert (
        set(devices)
        == {str(tmp_path / "nvme0n1").lstrip("/"), str(tmp_path / "nvme1n1").lstrip("/")}
        or len(devices) == 2
    )
    by_job = {j["name"]: j for j in parsed.metrics["jobs"]}
    assert by_job["read-nvme0n1"]["read_mbps"] > 0
    assert by_job["write-nvme1n1"]["write_mbps"] > 0
    assert "write-nvme0n1" not in by_job


def test_the_disk_holding_the_installed_os_is_only_read(tmp_path):
    (tmp_path / "sys/block/nvme0n1").mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    with open(tmp_path / "dev/nvme0n1", "wb") as disk:
        disk.truncate(64 * ir.MIB)
    ir.write_record(str(tmp_path / "dev/nvme0n1"), {"image_sha256": "c" * 64, "image_bytes": 1})
    tools = RecordedTools(
        {
            ("nvme", "list"): Completed(0, sample("nvme-list-micron-samsung.nvmecli1.json")),
            ("nvme", "id-ctrl"): Completed(0, sample("nvme-id-ctrl-wdc-sn730.nvmecli1.json")),
        }
    )
    hw = SystemHardware(capture=tools.capture, sys_root=tmp_path / "sys", dev_root=tmp_path / "dev")
    cmd = asyncio.run(hw._fio({}))
    names = [a.removeprefix("--name=") for a in cmd if a.startswith("--name=")]
    assert names == [
        "read-nvme0n1",
        "read-nvme1n1",
        "read-nvme2n1",
        "write-nvme1n1",
        "write-nvme2n1",
    ]


def _xid(answers):
    return asyncio.run(kernel_log(RecordedTools(answers).capture))


def test_a_node_with_no_journal_reads_the_ring_buffer_and_is_clean():
    # Recorded on this machine: journald keeps nothing, so journalctl says "-- No entries --".
    code, text = _xid(
        {
            ("journalctl",): Completed(
                0,
                sample("journalctl-k-no-journal.txt"),
                sample("journalctl-k-no-journal.stderr.txt"),
            ),
            ("dmesg",): Completed(0, sample("dmesg-this-machine.txt")),
        }
    )
    assert code == 0
    parsed = xid_parser.parse(text)
    assert parsed.error is None
    assert parsed.findings == []
    assert parsed.metrics["events"] == []


def test_journalctls_no_entries_is_never_taken_for_a_kernel_log():
    code, text = _xid(
        {
            ("journalctl",): Completed(1, sample("journalctl-k-grep-xid-no-entries.txt")),
            ("dmesg",): Completed(
                1, "", "dmesg: read kernel buffer failed: Operation not permitted"
            ),
        }
    )
    assert code == 1
    assert "no kernel log could be read" in text
    assert "Operation not permitted" in text


def test_an_xid_in_the_journal_is_kept():
    journal = sample("dmesg-this-machine.txt") + (
        "[ 8123.456789] NVRM: Xid (PCI:0000:18:00): 79, pid=2417, name=python3, "
        "GPU has fallen off the bus.\n"
        "[ 8124.000001] pcieport 0000:17:01.0: AER: Corrected error received: 0000:18:00.0\n"
    )
    code, text = _xid({("journalctl",): Completed(0, journal)})
    parsed = xid_parser.parse(
        text, bus_ids={"0000:18:00.0": {"index": 0, "serial": "0423718059721"}}
    )
    assert [f.part for f in parsed.findings] == ["GPU 0"]
    # The first line of the log, the Xid line and the AER line; nothing else of the log.
    assert len(text.splitlines()) == 3


def test_the_real_kernel_log_of_this_machine_is_clean():
    code, text = asyncio.run(kernel_log(capture))
    if code != 0 and "not permitted" in text:
        pytest.skip(f"this user may not read the kernel log: {text}")
    assert code == 0, text
    parsed = xid_parser.parse(text)
    assert parsed.error is None
    assert parsed.metrics["hardware_xids"] == []


def test_fio_in_a_qemu_guest_tested_both_drives_and_wrote_only_the_one_without_the_os():
    # The agent's own fio run in a QEMU 7.2 guest with two NVMe drives, after it had installed
    # an image and its record on nvme0n1 (samples/qemu72-agent-install-fio-erase.log).
    parsed = fio_parser.parse(sample("qemu72-fio-two-nvme.json"))
    assert parsed.error is None
    jobs = {j["name"]: j for j in parsed.metrics["jobs"]}
    assert set(jobs) == {"read-nvme0n1", "read-nvme1n1", "write-nvme1n1"}
    assert set(parsed.metrics["devices"]) == {"nvme0n1", "nvme1n1"}
    assert parsed.metrics["devices"]["nvme0n1"]["write_mbps"] == 0.0
    assert parsed.metrics["devices"]["nvme1n1"]["write_mbps"] > 0


def test_the_kernel_log_the_agent_read_in_a_qemu_guest_is_clean():
    # No journald in the ephemeral image: journalctl is absent and dmesg was read.
    parsed = xid_parser.parse(sample("qemu72-agent-kernel-log.txt"))
    assert parsed.error is None
    assert parsed.findings == []
