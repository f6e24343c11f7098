"""API permissions: Django model permissions, with view_* required for reads."""

from __future__ import annotations

from rest_framework.permissions import DjangoModelPermissions


class ModelPermissions(DjangoModelPermissions):
    """A role's API rights are its Django permissions (fleet.roles), reads included.

    DRF's stock class lets any authenticated user read; Greenlight asks for `view_<model>` so a
    user with no role (charlie) is refused, and a DCIM reader, who holds only view_*, writes
    nothing. Anonymous requests get 401.
    """

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "OPTIONS": ["%(app_label)s.view_%(model_name)s"],
        "HEAD": ["%(app_label)s.view_%(model_name)s"],
    }
