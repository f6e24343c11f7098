"""Django admin of acceptance: profiles are edited like manifests; results and decisions are read."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from fleet.admin_documents import VersionedDocumentAdminMixin

from .models import AcceptanceProfile, Decision, GateResult


@admin.register(AcceptanceProfile)
class AcceptanceProfileAdmin(VersionedDocumentAdminMixin, admin.ModelAdmin):
    pass


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written by the pipeline or by people through the UI: the admin only shows them."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(GateResult)
class GateResultAdmin(ReadOnlyAdmin):
    list_display = ["node", "run", "gate", "verdict", "started_at", "finished_at"]
    list_filter = ["gate", "verdict"]
    list_select_related = ["node", "run"]
    search_fields = ["node__serial"]


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "node", "kind", "actor", "override", "reason"]
    list_filter = ["kind", "override"]
    list_select_related = ["node", "actor"]
    search_fields = ["node__serial", "reason"]
