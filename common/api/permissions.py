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

    def has_permission(self, request, view):
        if request.user and request.user.is_authenticated:
            handler = getattr(view, request.method.lower(), None)
            if handler is None or request.method.lower() not in view.http_method_names:
                # The view does not offer this method: let dispatch answer 405, not 403.
                return True
        return super().has_permission(request, view)
