"""Roles are Django groups with exactly their permissions; people without staff get no admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from fleet.roles import DCIM_READER, FLEET_ADMIN, ROLE_PERMISSIONS, SITE_TECH

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("role", [SITE_TECH, FLEET_ADMIN, DCIM_READER])
def test_each_role_group_has_exactly_its_permissions(role):
    group = Group.objects.get(name=role)
    granted = {
        f"{app}.{codename}"
        for app, codename in group.permissions.values_list("content_type__app_label", "codename")
    }
    assert granted == set(ROLE_PERMISSIONS[role])


def test_what_each_role_may_do(alice, bob, dora):
    assert alice.has_perms(["fleet.change_manifest", "acceptance.change_acceptanceprofile"])
    assert alice.has_perm("provisioning.add_wiperequest")
    assert bob.has_perms(["fleet.start_run", "fleet.approve_node", "fleet.quarantine_node"])
    assert not bob.has_perm("fleet.change_manifest")
    assert not bob.has_perm("provisioning.add_wiperequest")
    assert dora.has_perm("fleet.view_node")
    # The node's bound TPM (its EK fingerprint) is read like the rest of its inventory.
    assert all(u.has_perm("acceptance.view_tpmbinding") for u in (alice, bob, dora))
    assert not any(
        p.split(".")[1].startswith(("add_", "change_", "delete_"))
        for p in dora.get_all_permissions()
    )
    # Nobody may delete an event; nobody but a superuser may delete anything at all.
    for user in (alice, bob, dora):
        assert not any(".delete_" in p for p in user.get_all_permissions())


@pytest.mark.parametrize("who", ["charlie", "bob", "dora"])
def test_people_without_staff_cannot_reach_the_admin(client, request, who):
    client.force_login(request.getfixturevalue(who))
    for url in [reverse("admin:index"), reverse("admin:fleet_manifest_changelist")]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response.url.startswith(reverse("admin:login"))


def test_charlie_as_staff_still_sees_nothing(client, charlie):
    charlie.is_staff = True
    charlie.save()
    client.force_login(charlie)
    assert client.get(reverse("admin:fleet_manifest_changelist")).status_code == 403
    assert client.get(reverse("admin:fleet_node_enroll_csv")).status_code == 403


def test_alice_reaches_the_fleet_admin(client, alice):
    client.force_login(alice)
    html = client.get(reverse("admin:index")).content.decode()
    for name in ["Manifests", "Nodes", "Acceptance profiles", "Events"]:
        assert name in html
    assert client.get(reverse("admin:provisioning_run_changelist")).status_code == 200


def test_the_event_log_is_read_only_in_the_admin(client, alice, node):
    from fleet.lifecycle import transition

    result = transition(node, "provisioning")
    client.force_login(alice)
    assert client.get(reverse("admin:fleet_event_add")).status_code == 403
    change = client.get(reverse("admin:fleet_event_change", args=[result.event_id]))
    assert change.status_code == 200 and 'type="submit"' not in change.content.decode().split(
        'id="content-main"'
    )[1].split("</form>")[0].replace('type="submit" value="Search"', "")
    delete = client.post(
        reverse("admin:fleet_event_delete", args=[result.event_id]), {"post": "yes"}
    )
    assert delete.status_code == 403
