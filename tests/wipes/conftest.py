"""The cast for tenant release: tina is the tenant platform's API token user.

Nodes come allocated to tenant "acme" (allocation "acme-7") and in service unless told otherwise.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.choices import ComponentKind, NodeState
from fleet.models import Component, Node
from fleet.roles import TENANT_PLATFORM
from tests import factories
from tests.support.slurm import one_node_slurm

TENANT = "acme"
ALLOCATION = "acme-7"


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    # The cast's passwords are hashed at every set-up; PBKDF2's cost buys nothing in a test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """A one-node Slurm cluster on loopback (tests.support.slurm); yields the node's name."""
    with one_node_slurm(tmp_path, monkeypatch) as name:
        yield name


@pytest.fixture
def tina(db):
    return factories.make_user("tina", TENANT_PLATFORM)


def allocated_node(
    rack, *, tenant: str = TENANT, allocation: str = ALLOCATION, state: str = NodeState.IN_SERVICE
) -> Node:
    """A node of the tenant's allocation, with two drives in its inventory."""
    node = factories.make_node(rack=rack)
    # Test set-up only: put the node in a state without going through the lifecycle table.
    Node.objects.filter(pk=node.pk).update(
        state=state,
        tenant=tenant,
        allocation_ref=allocation,
        allocated_at=timezone.now() - timedelta(days=30),
    )
    for index in range(2):
        Component.objects.create(
            node=node,
            kind=ComponentKind.NVME,
            slot=f"NVMe {index}",
            model="PM1743",
            serial=f"{node.serial}-D{index}",
        )
    node.refresh_from_db()
    return node


@pytest.fixture
def nodes(rack, manifest):
    return [allocated_node(rack) for _ in range(2)]


def drive_report(node: Node, index: int, *, result: str = "passed", **kw) -> dict:
    """One drive as the agent reports its erase."""
    return {
        "name": f"nvme{index}n1",
        "serial": f"{node.serial}-D{index}",
        "model": "PM1743",
        "method": "nvme_sanitize_crypto",
        "tool": "nvme",
        "exit_code": 0,
        "result": result,
        "verification": "sampled blocks changed after the erase",
        "started_at": "2026-01-05T10:00:00+00:00",
        "finished_at": "2026-01-05T10:00:20+00:00",
    } | kw
