"""The admin enrollment form, called as a view (wiring into the admin URLs is fleet's)."""

from __future__ import annotations

import pytest
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory

from fleet.models import Node
from provisioning.intake.admin import enroll_view
from tests import factories

pytestmark = pytest.mark.django_db


def post(user, data):
    request = RequestFactory().post("/admin/fleet/node/enroll/", data)
    request.user = user
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    return enroll_view(request)


def test_admin_enrolls_from_the_form(hall, sku):
    root = factories.make_user("root", superuser=True)
    bmc = hall.bmc(1)
    data = {"bmc": bmc.https_url, "username": bmc.node.username, "password": bmc.node.password}
    response = post(root, {**data, "sku": sku.pk})
    assert response.status_code == 302
    node = Node.objects.get(serial=bmc.node.serial)
    assert node.events.first().actor == root


def test_form_shows_the_refusal_without_the_password(hall, sku):
    root = factories.make_user("root", superuser=True)
    bmc = hall.bmc(0)
    hall.set_fault(0, "wrong_credentials")
    data = {"bmc": bmc.https_url, "username": "root", "password": bmc.node.password, "sku": sku.pk}
    response = post(root, data)
    assert response.status_code == 200
    body = response.content.decode()
    assert "authentication refused" in body and bmc.node.password not in body


def test_form_refuses_users_without_the_permission(hall, charlie):
    with pytest.raises(PermissionDenied):
        post(charlie, {})
