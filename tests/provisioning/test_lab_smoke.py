"""Two lab nodes through the real pipeline (one GPU reset on the way), then the drift audit."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from fleet.models import Component, Event, Node
from lab.run import LabRun, LabRunConfig
from provisioning.core.audit import audit_node
from provisioning.models import AgentCommand, PhaseRecord


# A real rack through real processes: minutes on a busy 2-core machine.
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_healthy_nodes_reach_awaiting_approval_and_the_audit_writes_nothing(tmp_path):
    config = LabRunConfig(nodes=2, faults="none", speed=400, soak_hours=1, timeout_s=300)
    with LabRun(config, log_dir=tmp_path) as lab:
        # XID 63 once on GPU 2 of the second node: the gate resets that GPU and runs again.
        lab.hall.set_fault(1, "gpu_row_remap:2")
        result = lab.run_pass()
        assert all(n["final_state"] == "awaiting_approval" for n in result["nodes"]), result
        remapped = lab.hall.nodes[1]
        assert lab.site.agents.states[remapped.serial].gpu_resets == {2: 1}
        health = PhaseRecord.objects.get(run__node__serial=remapped.serial, phase="gate:gpu_health")
        assert health.compared["reset_and_cleared"] == ["GPU 2"]
        assert lab.site.agents.states[lab.hall.nodes[0].serial].gpu_resets == {}

        lab_node = lab.hall.nodes[0]
        node = Node.objects.get(serial=lab_node.serial)
        agent = lab.site.agents.agents[lab_node.serial]
        bmc_writes, agent_commands = list(lab_node.writes), len(agent.commands)
        commands_in_db = AgentCommand.objects.count()

        # Drift: a person changed a BIOS setting behind Greenlight's back.
        lab_node.bios_current["ProcVirtualization"] = "Disabled"
        report = audit_node(node)
        out = io.StringIO()
        call_command("audit", "--rack", config.rack, "--json", stdout=out)

        assert lab_node.writes == bmc_writes, "the audit wrote to the BMC"
        assert len(agent.commands) == agent_commands, "the audit sent the agent a command"
        assert AgentCommand.objects.count() == commands_in_db, "the audit queued a command"
        drifted = {c["component"] for c in report.drifted}
        assert drifted == {"BIOS ProcVirtualization"}
        assert not report.unreadable
        assert {"phase": "nic_firmware"}.items() <= next(
            c for c in report.components if c["phase"] == "nic_firmware"
        ).items()
        reports = json.loads(out.getvalue())
        assert [r["drifted"] for r in reports] == [1, 0]

        # The pipeline updated NIC, DPU and NVMe firmware: the stored inventory is what the
        # audit observes now, row for row, one row per part.
        assert report.inventory_drift == [], report.inventory_drift
        stored = sorted(
            Component.objects.filter(node=node).values_list(
                "kind", "slot", "serial", "firmware_version"
            )
        )
        observed = sorted(
            (p["kind"], p["slot"], p["serial"], p["firmware_version"]) for p in report.inventory
        )
        assert stored == observed
        parts = lab_node.firmware
        assert {v for k, s, _, v in stored if k in ("nic", "dpu", "nvme")} == {
            parts["nic"],
            parts["dpu"],
            parts["nvme"],
        }
        # BMC, BIOS, the HGX tray and the power supply the BMC lists, and the agent's parts.
        assert len(stored) == 4 + len(lab_node.gpus) + len(
            [n for n in lab_node.nics if n["kind"] == "fabric"]
        ) + len(lab_node.dpus) + len(lab_node.drives)
        assert len({(k, s) for k, s, _, _ in stored}) == len(stored)
        assert Event.objects.filter(node=node, kind="audit").count() == 2
