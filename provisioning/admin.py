"""Django admin of provisioning: runs, read-only; enrollment from a BMC; and the admins of the
day-2 wing (manifests with their rollouts, wipes), registered by importing them here.

Runs are started through the UI and the API, which go through the engine; an admin form writing
these rows directly would bypass it.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import path

from common.admin import ReadOnlyMixin
from fleet.admin import NodeAdmin
from fleet.models import Node

from .day2 import manifest_admin  # noqa: F401 - registers the manifest admin with its rollouts
from .day2.wipes import admin as wipes_admin  # noqa: F401 - registers the wipes' admin
from .intake.admin import enroll_view
from .models import PhaseRecord, Run

# The fleet's node admin, plus the page that enrolls a node by Redfish discovery of its BMC:
# enrollment is the pipeline's (provisioning.intake.enrollment), and the fleet sits below it.
admin.site.unregister(Node)


@admin.register(Node)
class EnrollingNodeAdmin(NodeAdmin):
    change_list_template = "admin/provisioning/node_change_list.html"

    def get_urls(self):
        enroll = path("enroll/", self.admin_site.admin_view(self.enroll), name="fleet_node_enroll")
        return [enroll, *super().get_urls()]

    def enroll(self, request: HttpRequest) -> HttpResponse:
        return enroll_view(request, self.admin_site)


class PhaseRecordInline(ReadOnlyMixin, admin.TabularInline):
    model = PhaseRecord
    extra = 0
    fields = ["order", "phase", "status", "attempts", "started_at", "finished_at", "error"]
    readonly_fields = fields
    ordering = ["order"]


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["pk", "node", "kind", "status", "current_phase", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    list_select_related = ["node"]
    search_fields = ["node__serial"]
    inlines = [PhaseRecordInline]
