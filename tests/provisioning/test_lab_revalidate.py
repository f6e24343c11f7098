"""Day 2 on a lab rack: a quarantined node goes to break/fix and is revalidated on its installed
OS (the gates again, no firmware, erase or reimage), through the real pipeline."""

from __future__ import annotations

import pytest

from acceptance import decisions
from fleet.choices import NodeState
from fleet.models import Node
from fleet.roles import FLEET_ADMIN
from lab.run import LabRun, LabRunConfig
from provisioning.choices import PhaseStatus, RunKind, RunStatus
from provisioning.day2 import moves
from provisioning.models import Run
from tests import factories


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_repaired_node_is_revalidated_without_a_reimage(tmp_path):
    config = LabRunConfig(nodes=2, faults="none", speed=400, soak_hours=0.5, timeout_s=300)
    with LabRun(config, log_dir=tmp_path) as lab:
        first = lab.run_pass()
        assert {n["final_state"] for n in first["nodes"]} == {NodeState.AWAITING_APPROVAL}, first
        alice = factories.make_user("alice", FLEET_ADMIN)
        node, partner = Node.objects.filter(pk__in=[n.pk for n in lab.nodes]).order_by("position")
        decisions.approve(partner, alice, reason="lab rack accepted")
        decisions.quarantine(node, alice, reason="fan noise on GPU 3")
        node.refresh_from_db()
        installs = lab.site.agents.states[node.serial].install_record

        moves.perform("break-fix", node, alice, reason="fan replaced")
        node.refresh_from_db()
        moves.perform("revalidate", node, alice)
        run = Run.objects.get(node=node, kind=RunKind.REVALIDATE)
        assert lab.wait({node.pk: run}), "the revalidation did not end in time"

    run.refresh_from_db()
    node.refresh_from_db()
    assert (run.status, node.state) == (RunStatus.SUCCEEDED, NodeState.AWAITING_APPROVAL), (
        run.last_error
    )
    statuses = dict(run.phases.values_list("phase", "status"))
    assert "os_install" not in statuses and "secure_erase" not in statuses
    assert all(statuses[p] == PhaseStatus.DONE for p in statuses if p.startswith("gate:"))
    assert lab.site.agents.states[node.serial].install_record == installs, "reimaged"
