"""Tenant wipes in the Django admin, read-only: requests and their certificates are made through
the UI and the API, which go through the engine."""

from __future__ import annotations

from django.contrib import admin

from common.admin import ReadOnlyMixin

from ...models import WipeCertificate, WipeRequest


@admin.register(WipeRequest)
class WipeRequestAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["tenant", "allocation_ref", "status", "requested_by", "created_at"]
    list_filter = ["status"]
    search_fields = ["tenant", "allocation_ref"]


@admin.register(WipeCertificate)
class WipeCertificateAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["node", "wipe_request", "result", "started_at", "finished_at"]
    list_filter = ["result"]
    list_select_related = ["node", "wipe_request"]
    search_fields = ["node__serial", "wipe_request__tenant"]
