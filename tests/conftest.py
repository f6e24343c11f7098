"""The cast and shared fixtures.

alice is a fleet admin, bob a site tech, dora a DCIM reader; charlie has no role and must be
refused everything but reading his own login page.
"""

from __future__ import annotations

import pytest

from fleet.roles import DCIM_READER, FLEET_ADMIN, SITE_TECH
from greenlight.celery import app as celery_app
from tests import factories


@pytest.fixture
def alice(db):
    return factories.make_user("alice", FLEET_ADMIN, staff=True)


@pytest.fixture
def bob(db):
    return factories.make_user("bob", SITE_TECH)


@pytest.fixture
def dora(db):
    return factories.make_user("dora", DCIM_READER)


@pytest.fixture
def charlie(db):
    return factories.make_user("charlie")


@pytest.fixture
def sku(db):
    return factories.make_sku()


@pytest.fixture
def manifest(db):
    return factories.make_manifest()


@pytest.fixture
def profile(db):
    return factories.make_profile()


@pytest.fixture
def rack(db):
    return factories.make_rack()


@pytest.fixture
def node(db, rack, manifest):
    return factories.make_node(rack=rack)


@pytest.fixture
def eager_celery():
    """Run the tasks sent during the test in-process, as a worker would, instead of queueing them."""
    celery_app.conf.task_always_eager = True
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = False
