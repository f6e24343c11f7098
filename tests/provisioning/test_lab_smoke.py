"""A small lab rack through the real pipeline: smoke test while building."""

from __future__ import annotations

import pytest

from lab.run import LabRun, LabRunConfig


@pytest.mark.django_db(transaction=True)
def test_two_healthy_nodes_reach_awaiting_approval(tmp_path):
    config = LabRunConfig(nodes=2, faults="none", speed=300, soak_hours=1, timeout_s=240)
    with LabRun(config, log_dir=tmp_path) as lab:
        result = lab.run_pass()
    print(result)
    for node in result["nodes"]:
        assert node["final_state"] == "awaiting_approval", node
