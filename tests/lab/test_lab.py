"""The lab on its own: clock, faults, node power events, inventory, the serve command."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.core.management import CommandError, call_command

from lab.clock import LabClock
from lab.faults import CATALOG, NodeFaults, parse_fault
from lab.hall import LabHall, read_inventory

ROOT = Path(__file__).resolve().parents[2]


def test_clock_speed_and_manual_steps():
    stopped = LabClock(speed=0)
    assert stopped.now() == 0
    assert stopped.advance(90) == 90
    assert stopped.real_seconds(10) == float("inf")
    fast = LabClock(speed=1000)
    assert fast.real_seconds(78 * 60) == pytest.approx(4.68)
    with pytest.raises(ValueError):
        stopped.advance(-1)


def test_fault_catalog_and_seeded_dice():
    assert {spec.kind for spec in CATALOG.values()} == {"hardware", "transient"}
    assert parse_fault("bmc_503") == ("bmc_503", "0.3")
    assert parse_fault("firmware_update_fails:nvme") == ("firmware_update_fails", "nvme")
    with pytest.raises(ValueError, match="unknown fault"):
        parse_fault("gremlins")
    rolls = []
    for _ in range(2):
        faults = NodeFaults("7:0", {"bmc_503": "0.5"})
        rolls.append([faults.roll("bmc_503") for _ in range(50)])
    assert rolls[0] == rolls[1] and 0 < sum(rolls[0]) < 50
    faults = NodeFaults(1, {"power_on_ignored": ""})
    assert faults.consume("power_on_ignored") and not faults.consume("power_on_ignored")


def test_power_events_let_the_agent_simulation_attach():
    hall = LabHall(1, flavours=["dell"], speed=0, seed=3)  # not started: the node model alone
    node = hall.node(0)
    seen: list[tuple[str, str]] = []
    node.on_boot.append(lambda n, target: seen.append(("boot", target)))
    node.on_power_off.append(lambda n: seen.append(("off", n.serial)))
    node.set_boot("Pxe", "Once", "UEFI")
    node.stage_bios({"ProcVirtualization": "Enabled"}, 0, job=True)
    assert node.reset("On", hall.clock.now()) == ""
    hall.advance(29)
    assert seen == [] and node.power == "PoweringOn"
    hall.advance(1)
    assert seen == [("boot", "Pxe")]  # the ephemeral environment starts
    assert node.bios_current["ProcVirtualization"] == "Enabled"
    node.reset("ForceRestart", hall.clock.now())
    hall.advance(60)
    assert seen == [("boot", "Pxe"), ("off", node.serial), ("boot", "Hdd")]  # then the host OS
    assert node.boot_count == 2
    node.reset("ForceOff", hall.clock.now())
    hall.advance(60)
    assert node.reset("ForceRestart", hall.clock.now()) == "the system is off; power it on instead"


def test_dell_without_a_job_does_not_apply_pending_bios():
    hall = LabHall(1, flavours=["dell"], speed=0)
    node = hall.node(0)
    node.stage_bios({"LogicalProc": "Disabled"}, 0, job=False)
    node.reset("On", 0)
    hall.advance(60)
    assert node.bios_current["LogicalProc"] == "Enabled"
    assert node.bios_pending == {"LogicalProc": "Disabled"}


def test_same_seed_same_hall_but_fresh_passwords():
    one, two = LabHall(3, seed=5), LabHall(3, seed=5)
    assert [n.serial for n in one.nodes] == [n.serial for n in two.nodes]
    assert [n.macs for n in one.nodes] == [n.macs for n in two.nodes]
    assert [n.password for n in one.nodes] != [n.password for n in two.nodes]
    assert [n.flavour for n in one.nodes] == ["dell", "hpe", "supermicro"]


def test_inventory_file_and_each_bmc_on_its_own_loopback_address(tmp_path):
    with LabHall(4, speed=0, seed=1, faults={3: ["bmc_503:0.1"]}) as hall:
        path = hall.write_inventory(tmp_path / "inventory.json")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # it holds BMC passwords
        inventory = read_inventory(path)
        hosts = set()
        for entry, node in zip(inventory["nodes"], hall.nodes, strict=True):
            assert entry["serial"] == node.serial
            assert entry["password"] == node.password
            assert entry["macs"] == node.macs
            assert re.fullmatch(r"([0-9A-F]{2}:){31}[0-9A-F]{2}", entry["cert_fingerprint"])
            hosts.add(httpx.URL(entry["bmc_url"]).host)
            # Plain HTTP is served too; the root needs no credentials, a system does.
            root = httpx.get(entry["bmc_http_url"] + "/redfish/v1/", timeout=3)
            assert root.status_code == 200 and root.json()["Systems"]
            system = httpx.get(entry["bmc_http_url"] + "/redfish/v1/Systems", timeout=3)
            assert system.status_code == 401
        assert hosts == {"127.0.1.1", "127.0.1.2", "127.0.1.3", "127.0.1.4"}
        assert inventory["nodes"][3]["faults"] == {"bmc_503": "0.1"}


def test_lab_serve_command_writes_the_inventory_and_stops_on_sigterm(tmp_path):
    inventory = tmp_path / "inv.json"
    env = dict(os.environ)  # the same var dir: its embedded Redis is already running
    proc = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "lab",
            "serve",
            "--nodes",
            "2",
            "--flavours",
            "hpe,supermicro",
            "--speed",
            "60",
            "--seed",
            "4",
            "--inventory",
            str(inventory),
            "--fault",
            "1=slow_reset",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not inventory.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        data = read_inventory(inventory)
        assert [n["flavour"] for n in data["nodes"]] == ["hpe", "supermicro"]
        assert data["speed"] == 60 and data["nodes"][1]["faults"] == {"slow_reset": "20"}
        assert (
            httpx.get(data["nodes"][0]["bmc_http_url"] + "/redfish/v1", timeout=3).status_code
            == 200
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0, out
    assert "lab stopped" in out
    for node in data["nodes"]:
        assert node["password"] not in out


def test_lab_serve_rejects_a_bad_fault():
    with pytest.raises(CommandError, match="unknown fault 'gremlins'"):
        call_command("lab", "serve", "--fault", "0=gremlins")
    with pytest.raises(CommandError, match="INDEX=name"):
        call_command("lab", "serve", "--fault", "gremlins")


def test_production_apps_never_import_the_lab():
    offenders = []
    pattern = re.compile(r"^\s*(from\s+lab(\.|\s)|import\s+lab(\.|\s|$))", re.MULTILINE)
    for app in ("fleet", "provisioning", "acceptance", "console", "greenlight"):
        for source in (ROOT / app).rglob("*.py"):
            if pattern.search(source.read_text()):
                offenders.append(str(source.relative_to(ROOT)))
    assert offenders == []
