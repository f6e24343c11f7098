"""What one VM-tier pass did to one node, from the database and the VM's console log."""

from __future__ import annotations

import re
from typing import Any

from fleet.models import Node
from provisioning.choices import PhaseStatus
from provisioning.models import Run

from .console import AGENT_STARTED
from .tier import VmNode

ERASED = re.compile(r"erased \((?P<method>[^)]+)\)")


def node_summary(node: Node, run: Run | None, vm: VmNode, console_mark: int) -> dict[str, Any]:
    """Final state, phases run and skipped with their seconds, the erase method, agent starts."""
    node.refresh_from_db()
    out: dict[str, Any] = {
        "vm": vm.spec.name,
        "serial": node.serial,
        "smbios_serial": vm.spec.serial,
        "macs": list(vm.spec.macs),
        "nvme_serial": vm.spec.nvme_serial,
        "final_state": node.state,
        "console_log": str(vm.spec.console_log),
        "agent_starts": _agent_starts(vm, console_mark),
    }
    if run is None:
        return {**out, "reason": f"not started: node is {node.state}"}
    run.refresh_from_db()
    phases = []
    erase_methods: list[str] = []
    for record in run.phases.order_by("order"):
        seconds = None
        if record.started_at and record.finished_at:
            seconds = round((record.finished_at - record.started_at).total_seconds(), 1)
        phases.append({"phase": record.phase, "status": record.status, "seconds": seconds})
        for change in record.changes or []:
            match = ERASED.search(str(change.get("to", ""))) if isinstance(change, dict) else None
            if match:
                erase_methods.append(match.group("method"))
    run_seconds = None
    if run.started_at and run.finished_at:
        run_seconds = round((run.finished_at - run.started_at).total_seconds(), 1)
    return {
        **out,
        "run_status": run.status,
        "reason": run.last_error or run.wait_reason,
        "phases_run": [p["phase"] for p in phases if p["status"] == PhaseStatus.DONE],
        "phases_skipped": [p["phase"] for p in phases if p["status"] == PhaseStatus.SKIPPED],
        "erase_methods": erase_methods,
        "run_seconds": run_seconds,
        "phases": phases,
    }


def _agent_starts(vm: VmNode, mark: int) -> int:
    with vm.spec.console_log.open("rb") as log:
        log.seek(mark)
        return log.read().count(AGENT_STARTED.encode())
