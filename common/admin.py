"""Admin pieces every app's admin shares."""

from __future__ import annotations

from django.http import HttpRequest


class ReadOnlyMixin:
    """Rows the engine writes: an admin form writing them directly would bypass it."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
