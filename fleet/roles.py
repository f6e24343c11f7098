"""Roles as Django groups: who may do what (DESIGN.md, Trust). The one table of role permissions."""

from __future__ import annotations

SITE_TECH = "site tech"
FLEET_ADMIN = "fleet admin"
DCIM_READER = "DCIM reader"
TENANT_PLATFORM = "tenant platform"

_READ = [
    "fleet.view_site",
    "fleet.view_rack",
    "fleet.view_sku",
    "fleet.view_node",
    "fleet.view_component",
    "fleet.view_manifest",
    "fleet.view_event",
    "fleet.view_skumember",
    "fleet.view_nvlinkdomain",
    "fleet.view_racksystem",
    "provisioning.view_run",
    "provisioning.view_phaserecord",
    "provisioning.view_wiperequest",
    "provisioning.view_wipecertificate",
    "provisioning.view_rollout",
    "provisioning.view_rolloutnode",
    "provisioning.view_rackrun",
    "provisioning.view_rackrunstage",
    "provisioning.view_rackrunmember",
    "acceptance.view_acceptanceprofile",
    "acceptance.view_gateresult",
    "acceptance.view_soaksample",
    "acceptance.view_decision",
    "acceptance.view_tpmbinding",
]

_SITE_TECH = _READ + [
    "fleet.start_run",
    "fleet.approve_node",
    "fleet.quarantine_node",
    "acceptance.add_decision",
    "provisioning.request_burn_in",
]

ROLE_PERMISSIONS: dict[str, list[str]] = {
    # Watches racks, starts runs, approves and quarantines.
    SITE_TECH: _SITE_TECH,
    # Everything a tech does, plus manifests, profiles, the fleet's inventory and wipes.
    FLEET_ADMIN: _SITE_TECH
    + [
        "fleet.add_site",
        "fleet.change_site",
        "fleet.add_rack",
        "fleet.change_rack",
        "fleet.add_sku",
        "fleet.change_sku",
        "fleet.add_node",
        "fleet.change_node",
        "fleet.add_skumember",
        "fleet.change_skumember",
        "fleet.add_nvlinkdomain",
        "fleet.change_nvlinkdomain",
        "fleet.add_racksystem",
        "fleet.change_racksystem",
        "fleet.add_manifest",
        "fleet.change_manifest",
        "fleet.skip_phase",
        "fleet.override_approval",
        "acceptance.add_acceptanceprofile",
        "acceptance.change_acceptanceprofile",
        "provisioning.add_wiperequest",
        "provisioning.change_wiperequest",
    ],
    # Reads inventory, state and verdicts through the API; writes nothing.
    DCIM_READER: _READ,
    # The tenant platform's API token: files tenant-release wipes and reads their certificates,
    # and asks for a burn-in of a node before handing it out. Nothing else: it sees no node
    # list, so one tenant cannot browse another's machines.
    TENANT_PLATFORM: [
        "provisioning.request_burn_in",
        "provisioning.add_wiperequest",
        "provisioning.view_wiperequest",
        "provisioning.view_wipecertificate",
    ],
}


def sync_roles(apps, schema_editor=None) -> None:
    """Create the role groups and give each exactly its permissions (a migration's RunPython)."""
    from django.contrib.auth.management import create_permissions

    # Permissions are normally created after migrate; the groups need them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, names in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        perms = []
        for name in names:
            app_label, codename = name.split(".")
            perm = Permission.objects.filter(
                content_type__app_label=app_label, codename=codename
            ).first()
            # An early migration runs this with today's table: a permission a later migration
            # creates is not there yet, and that migration syncs the roles again. After the last
            # one each group has exactly its list (tests/fleet/test_roles.py).
            if perm is not None:
                perms.append(perm)
        group.permissions.set(perms)
