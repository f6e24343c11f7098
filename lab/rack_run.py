"""A lab rack-scale run: a GB200 NVL72 (or a smaller rack of its kind) brought up by Greenlight's
rack run through the real processes, every member behind its own lab BMC.

It is a LabRun whose hall is the rack's members in layout order, coupled by lab.rack; it
enrolls each member from its BMC, seeds the rack faults, starts a rack run and waits (polling
the database) until it ends, then summarises it: the stages in order with their parallelism
(the most members in flight at once), the rack-wide verdict, and each member's firmware phases
and lab BMC flash count. Used by `manage.py lab run --rack-scale` and the tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acceptance.models import RackVerdict
from fleet.models import Node, RackSystem
from provisioning.choices import OPEN_RACK_RUN_STATUSES, PhaseStatus
from provisioning.models import PhaseRecord, Run
from provisioning.rack.report import describe
from provisioning.rack.runs import start_rack_run
from provisioning.rack_models import RackRun, RackRunMember

from .rack import LabRackFabric
from .rack_documents import NVL72, RackShape, enroll_rack, member_nodes, publish_rack_documents
from .run import LabRun, LabRunConfig


@dataclass
class LabRackConfig(LabRunConfig):
    shape: RackShape = NVL72
    # The manifest's `rack_stages:` block as YAML ("" for the default staged rules).
    stages_yaml: str = ""
    # Rack faults by member: {("switch_tray", 3): ["nvlink_port_down:5"]}, numbers from 1.
    rack_faults: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    rack: str = "LAB-NVL72"
    speed: float = 400.0
    soak_hours: float = 0.25


class LabRackRun(LabRun):
    """Context manager: the rack is up and enrolled inside the block; `run_pass()` does one."""

    config: LabRackConfig

    def __init__(self, config: LabRackConfig, log_dir: Path | None = None):
        config.nodes = len(config.shape.layout())
        config.flavours = config.shape.flavours()
        config.faults = "none"
        super().__init__(config, log_dir)
        self.fabric = LabRackFabric(self.hall, config.rack)
        self.system: RackSystem | None = None

    def prepare(self) -> list[Node]:
        c = self.config
        assert self.site is not None
        rack_sku = publish_rack_documents(
            c.shape, self.site.artifact_url, soak_hours=c.soak_hours, stages_yaml=c.stages_yaml
        )
        self.system = enroll_rack(self.hall, rack_sku, site=c.site, rack=c.rack)
        for (kind, number), specs in c.rack_faults.items():
            for spec in specs:
                self.lab_node(kind, number).faults.set(spec)
        return member_nodes(self.system)

    def lab_node(self, kind: str, number: int):
        """The hall's node of member `kind` number `number` (from 1)."""
        return [n for n in self.hall.nodes if n.kind == kind][number - 1]

    # -- passes ------------------------------------------------------------------------------

    def start_rack_pass(self) -> RackRun:
        assert self.system is not None
        return start_rack_run(self.system.rack)

    def wait_rack(self, rack_run: RackRun, poll_s: float = 0.25) -> bool:
        """Poll until the rack run ended (True) or the time limit passed (False)."""
        deadline = time.monotonic() + self.config.timeout_s
        while time.monotonic() < deadline:
            rack_run.refresh_from_db()
            if rack_run.status not in OPEN_RACK_RUN_STATUSES:
                return True
            time.sleep(poll_s)
        return False

    def run_pass(self) -> dict[str, Any]:
        """One rack run over the rack; its summary, with its wall time."""
        started = time.monotonic()
        rack_run = self.start_rack_pass()
        finished = self.wait_rack(rack_run)
        return {
            "finished": finished,
            "wall_s": round(time.monotonic() - started, 1),
            **self.rack_summary(rack_run),
        }

    def rack_summary(self, rack_run: RackRun) -> dict[str, Any]:
        assert self.system is not None
        self.system.refresh_from_db()
        report = describe(rack_run)
        verdict = RackVerdict.objects.filter(rack_run=rack_run).first()
        return {
            "rack_run": rack_run.pk,
            "status": report["status"],
            "last_error": report["last_error"],
            "rack_state": self.system.state,
            "stages": [
                {
                    k: s[k]
                    for k in (
                        "index",
                        "kind",
                        "action",
                        "max_parallel",
                        "peak_parallel",
                        "verify",
                        "status",
                        "verify_reason",
                    )
                }
                | {
                    "members": len(s["members"]),
                    "skipped_cycles": sum(
                        "no power cycle needed" in m["reason"] for m in s["members"]
                    ),
                }
                for s in report["stages"]
            ],  # fmt: skip
            "verdict": None
            if verdict is None
            else {
                "verdict": verdict.verdict,
                "summary": verdict.summary,
                "findings": verdict.findings,
                "metrics": verdict.metrics,
                "shelves": verdict.shelves,
            },  # fmt: skip
            "members": self.member_summary(rack_run),
        }

    def member_summary(self, rack_run: RackRun) -> list[dict[str, Any]]:
        """Each member: its state, its run of this rack run, its firmware phases done and
        skipped there, and how many updates its lab BMC ever accepted."""
        runs = dict(
            RackRunMember.objects.filter(stage__rack_run=rack_run, run__isnull=False).values_list(
                "node_id", "run_id"
            )
        )
        out = []
        for node in member_nodes(self.system) if self.system else []:
            lab_node = self.hall.node(node.serial)
            run = Run.objects.filter(pk=runs.get(node.pk)).first()
            firmware = PhaseRecord.objects.filter(run=run, phase__endswith="_firmware")
            out.append(
                {
                    "serial": node.serial,
                    "kind": node.kind,
                    "member_index": node.member_index,
                    "state": node.state,
                    "run_status": run.status if run else "",
                    "firmware_done": firmware.filter(status=PhaseStatus.DONE).count(),
                    "firmware_skipped": firmware.filter(status=PhaseStatus.SKIPPED).count(),
                    "bmc_flashes": len(lab_node.flashes),
                    "shelf_tripped": lab_node.tripped,
                }
            )
        return out
