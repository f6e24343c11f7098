"""Parts stored before their observer was kept: those with a serial are marked the agent's."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("fleet", "0005_node_bmc_plain_http_reason")]
AFTER = [("fleet", "0006_component_source_fabric_partner")]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_old_parts_with_serials_become_the_agents():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    site = old.get_model("fleet", "Site").objects.create(name="hall-m")
    rack = old.get_model("fleet", "Rack").objects.create(site=site, name="RM", height_u=42)
    sku = old.get_model("fleet", "Sku").objects.create(
        name="sku-m", gpu_count=8, gpu_model="H100", nic_count=8, nic_line_rate_gbps=400,
        dpu_count=2, drive_count=8, nvlink_bandwidth_gbps=450,
    )  # fmt: skip
    node = old.get_model("fleet", "Node").objects.create(
        serial="SN-M", sku=sku, rack=rack, position=1, bmc_address="https://127.0.9.1"
    )
    Component = old.get_model("fleet", "Component")
    Component.objects.create(node=node, kind="nic", slot="NIC 0", serial="N0")
    Component.objects.create(node=node, kind="nic", slot="Mellanox ConnectX-7 0")
    Component.objects.create(node=node, kind="bmc", slot="BMC")

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("fleet", "Component")
    assert dict(new.objects.values_list("slot", "source")) == {
        "NIC 0": "agent",
        "Mellanox ConnectX-7 0": "bmc",
        "BMC": "bmc",
    }
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
