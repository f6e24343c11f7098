"""Two real VMs through the real pipeline, over real Redfish, booting Greenlight's real image.

The VM tier (lab/vm): QEMU VMs behind sushy-tools' libvirt driver, each booted by virtual media
into the ephemeral image `bootimage` builds, whose agent checks in over TLS with the boot
credential on its kernel command line. Where the tier cannot run (no root, packages missing,
libvirt refusing), this test fails and says why: it never skips.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import libvirt
import pytest
from django.conf import settings

from fleet.choices import EventKind, NodeState
from fleet.models import Component, Event, Node
from lab.vm import libvirt_host
from lab.vm.packages import missing_packages, missing_python_modules
from lab.vm.run import VmLabConfig, VmLabRun
from provisioning.models import AgentSession

# The image cache survives between runs: a cold build is a minute or two, a warm one seconds.
IMAGE_DIR = Path(settings.BASE_DIR) / "var" / "vm-tier-image"


def _why(summary: dict) -> str:
    """A node's summary in a line or two: where it stopped and why (for assertion messages)."""
    done = [(p["phase"], p["status"], p["seconds"]) for p in summary.get("phases", [])]
    return (
        f"{summary['vm']} {summary['final_state']}: {summary.get('reason')}; "
        f"phases {[d for d in done if d[1] != 'pending']}; console {summary['console_log']}"
    )


def _report(name: str, result: dict) -> None:
    """Print a pass in full: pytest shows it with a failure, where an assertion message is cut."""
    print(f"== {name}: finished={result['finished']} in {result['seconds']} s")
    for summary in result["nodes"]:
        print(json.dumps({k: v for k, v in summary.items() if k != "phases"}, default=str))
        for phase in summary.get("phases", []):
            if phase["status"] != "pending":
                print(f"   {phase['phase']:<24} {phase['status']:<10} {phase['seconds']}")
        if not result["finished"]:
            console = Path(summary["console_log"])
            tail = console.read_text(errors="replace")[-3000:] if console.exists() else ""
            print(f"-- {summary['vm']} console tail:\n{tail}")


def _require_tier() -> None:
    problems = []
    if os.geteuid() != 0:
        problems.append("not root (libvirt and QEMU run as root here)")
    missing = missing_packages()
    if missing:
        problems.append(f"apt packages missing: {' '.join(missing)} (.ci/run installs them)")
    if missing_python_modules():
        problems.append(f"Python packages missing: {missing_python_modules()}")
    if problems:
        pytest.fail("the VM tier cannot run here: " + "; ".join(problems), pytrace=False)


@pytest.mark.vm
@pytest.mark.timeout(2100)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_vms_reach_awaiting_approval_and_the_second_pass_skips(tmp_path):
    _require_tier()
    config = VmLabConfig(nodes=2, workdir=tmp_path, image_dir=IMAGE_DIR, timeout_s=900)
    with VmLabRun(config) as lab:
        first = lab.run_pass()
        _report("pass 1", first)
        by_serial = {n["serial"]: n for n in first["nodes"]}

        # The boot path: each VM booted its own ISO by virtual media and its agent checked in
        # over TLS with the credential that ISO carried.
        for vm in lab.tier.nodes:
            node = Node.objects.get(serial=vm.spec.serial)
            assert AgentSession.objects.filter(node=node, environment="ephemeral").exists(), _why(
                by_serial[vm.spec.serial]
            )
            console = vm.spec.console_log.read_text(errors="replace")
            assert "checked in as node" in console
            # The serial console (a BMC's SOL log on a real server) never shows the credential.
            assert not re.search(r"greenlight\.credential=(?!<hidden>)", console), vm.spec.name

        assert first["finished"], [_why(n) for n in first["nodes"]]
        for vm in lab.tier.nodes:
            summary = by_serial[vm.spec.serial]
            node = Node.objects.get(serial=vm.spec.serial)
            assert summary["final_state"] == NodeState.AWAITING_APPROVAL, _why(summary)
            # Real inventory: what QEMU was given is what the node reports.
            assert {m.lower() for m in vm.spec.macs} <= {m.lower() for m in node.mac_addresses}
            assert Component.objects.filter(node=node, serial=vm.spec.nvme_serial).exists()
            # A real erase of the NVMe, a real OS written and booted, storage judged on fio.
            assert summary["erase_methods"], _why(summary)
            for phase in ("secure_erase", "os_install", "boot_disk", "wait_for_host_os"):
                assert phase in summary["phases_run"], _why(summary)
            assert "gate:storage" in summary["phases_run"], _why(summary)
            assert AgentSession.objects.filter(node=node, environment="host_os").exists()

        # Switched off between passes, as a PDU would: the second pass's power-on is a boot
        # Greenlight orders, which re-arms the installed OS's credential for its second boot.
        with libvirt.open(libvirt_host.URI) as conn:
            for vm in lab.tier.nodes:
                conn.lookupByUUIDString(vm.uuid).destroy()

        second = lab.run_pass()
        _report("pass 2", second)
        assert second["finished"], [_why(n) for n in second["nodes"]]
        for summary in second["nodes"]:
            assert summary["final_state"] == NodeState.AWAITING_APPROVAL, _why(summary)
            for phase in ("secure_erase", "os_install"):
                assert phase in summary["phases_skipped"], _why(summary)
        # One redemption per boot Greenlight ordered, proven on real reboots: every boot of
        # both passes (the ephemeral environment, the installed OS, and the installed OS again
        # after the power-on) redeemed its credential once, and none was refused or contested.
        serials = [vm.spec.serial for vm in lab.tier.nodes]
        refused = Event.objects.filter(
            node__serial__in=serials, kind=EventKind.AGENT_REFUSED, message__contains="credential"
        )
        assert not refused.exists(), [e.message for e in refused]
        for serial in serials:
            boots = AgentSession.objects.filter(node__serial=serial)
            assert boots.filter(environment="host_os").count() >= 2, serial
            assert not Node.objects.get(serial=serial).attention

    assert not lab.tier.nodes and not lab.children  # torn down
