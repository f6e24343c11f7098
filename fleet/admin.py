"""Django admin of the fleet: inventory, manifests, the read-only event log, CSV enrollment."""

from __future__ import annotations

import io

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import InMemoryUploadedFile
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from .admin_documents import VersionedDocumentAdminMixin
from .choices import EventKind
from .enrollment_csv import COLUMNS, enroll_csv
from .events import record, record_plain_http_mark
from .models import (
    Component,
    Event,
    MaintenanceWindow,
    Manifest,
    Node,
    Rack,
    Site,
    SiteWorker,
    Sku,
)
from .rack_scale import NvlinkDomain, RackSystem, SkuMember

# Largest CSV the upload page accepts; a hall of a few thousand nodes is well under it.
MAX_CSV_BYTES = 5 * 1024 * 1024


class RackInline(admin.TabularInline):
    model = Rack
    extra = 0
    fields = ["name", "height_u"]


class SiteWorkerInline(admin.TabularInline):
    """The site's workers as their heartbeats left them: written by the workers, read here."""

    model = SiteWorker
    extra = 0
    fields = ["name", "started_at", "seen_at", "stopped_at"]
    readonly_fields = ["name", "started_at", "seen_at", "stopped_at"]
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class MaintenanceWindowInline(admin.TabularInline):
    model = MaintenanceWindow
    extra = 0
    fields = ["days", "start", "end"]


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ["name", "time_zone", "own_workers", "node_plane_url", "description"]
    search_fields = ["name"]
    inlines = [MaintenanceWindowInline, SiteWorkerInline, RackInline]


@admin.register(Rack)
class RackAdmin(admin.ModelAdmin):
    list_display = ["__str__", "site", "name", "height_u"]
    list_filter = ["site"]
    list_select_related = ["site"]
    search_fields = ["name", "site__name"]


class SkuMemberInline(admin.TabularInline):
    """A rack-scale SKU's members: how many of each kind, and how its BMC tells its kind."""

    model = SkuMember
    fk_name = "sku"
    extra = 0
    fields = [
        "kind",
        "count",
        "member_sku",
        "height_u",
        "redfish_resource",
        "match_property",
        "match_pattern",
    ]


@admin.register(Sku)
class SkuAdmin(admin.ModelAdmin):
    inlines = [SkuMemberInline]
    list_display = [
        "name",
        "gpu_count",
        "gpu_model",
        "nic_count",
        "nic_line_rate_gbps",
        "dpu_count",
        "drive_count",
        "nvlink_bandwidth_gbps",
    ]
    search_fields = ["name", "description"]


class NodeAdminForm(forms.ModelForm):
    """The BMC password is write-only: never rendered, and blank on edit keeps the stored one."""

    bmc_password = forms.CharField(
        label="BMC password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )

    class Meta:
        model = Node
        fields = [
            "serial",
            "hostname",
            "sku",
            "rack",
            "position",
            "manifest",
            "attention",
            "bmc_address",
            "bmc_plain_http_reason",
            "bmc_username",
            "bmc_password",
            "mac_addresses",
            "bios_attributes",
            "tenant",
            "allocation_ref",
            "allocated_at",
        ]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # The decrypted password must not reach the template, not even as an initial value.
        self.initial.pop("bmc_password", None)
        if self.instance.pk:
            self.fields["bmc_password"].help_text = (
                "Leave blank to keep the stored password."
                if self.instance.bmc_password
                else "No password is stored."
            )
        else:
            self.fields["bmc_password"].required = True

    def clean_bmc_password(self) -> str:
        value = self.cleaned_data.get("bmc_password", "")
        if not value and self.instance.pk:
            return self.instance.bmc_password
        return value


class ComponentInline(admin.TabularInline):
    model = Component
    extra = 0
    fields = ["kind", "slot", "model", "serial", "part_number", "firmware_version", "updateable"]


class InMemoryUploadHandler(FileUploadHandler):
    """Keep an upload in memory, never in a temporary file: an enrollment CSV holds BMC passwords.

    Django spools uploads past FILE_UPLOAD_MAX_MEMORY_SIZE to disk; this handler instead skips a
    file past MAX_CSV_BYTES and says so.
    """

    too_large = False

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.buffer = io.BytesIO()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        if start + len(raw_data) > MAX_CSV_BYTES:
            self.too_large = True
            raise SkipFile()
        self.buffer.write(raw_data)

    def file_complete(self, file_size: int) -> InMemoryUploadedFile:
        self.buffer.seek(0)
        return InMemoryUploadedFile(
            self.buffer,
            self.field_name,
            self.file_name,
            self.content_type,
            file_size,
            self.charset,
            self.content_type_extra,
        )


class EnrollCsvForm(forms.Form):
    file = forms.FileField(label="CSV file", help_text=f"Columns: {', '.join(COLUMNS)}")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise forms.ValidationError("The file is not UTF-8 text.") from None


class RackListFilter(admin.RelatedFieldListFilter):
    """The rack filter's choices, named site/rack, read with their sites in one query: Django's
    own reads each rack's site for its name, one query per rack (120 of them at 5,000 nodes)."""

    def field_choices(self, field, request, model_admin):
        racks = Rack.objects.select_related("site").order_by("site__name", "name")
        return [(rack.pk, str(rack)) for rack in racks]


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    form = NodeAdminForm
    change_list_template = "admin/fleet/node/change_list.html"
    list_display = [
        "serial",
        "hostname",
        "sku",
        "rack",
        "position",
        "state_badge",
        "bmc_address",
        "manifest",
    ]
    list_filter = ["state", "sku", "rack__site", ("rack", RackListFilter)]
    list_select_related = ["sku", "rack__site", "manifest__sku"]
    search_fields = ["serial", "hostname", "bmc_address"]
    readonly_fields = ["state", "state_changed_at", "bmc_cert_fingerprint", "created_at"]
    fieldsets = [
        (None, {"fields": ["serial", "hostname", "sku", "rack", "position"]}),
        ("Lifecycle", {"fields": ["state", "state_changed_at", "manifest", "attention"]}),
        (
            "BMC",
            {
                "fields": [
                    "bmc_address",
                    "bmc_plain_http_reason",
                    "bmc_username",
                    "bmc_password",
                    "bmc_cert_fingerprint",
                ]
            },
        ),
        ("Inventory", {"fields": ["mac_addresses", "bios_attributes"]}),
        ("Tenant", {"fields": ["tenant", "allocation_ref", "allocated_at"]}),
    ]
    inlines = [ComponentInline]

    @admin.display(description="State", ordering="state")
    def state_badge(self, obj: Node) -> str:
        return format_html(
            '<span class="badge badge-{}">{} {}</span>',
            obj.get_state_color(),
            obj.get_state_icon(),
            obj.get_state_display(),
        )

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # A node leaves the fleet by being decommissioned; its events keep its history.
        return False

    def save_model(self, request: HttpRequest, obj: Node, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            record(obj, EventKind.ENROLLED, actor=request.user, message="Enrolled in the admin")
            if obj.bmc_allows_plain_http():
                record_plain_http_mark(obj, actor=request.user)
        elif form.changed_data:
            # Field names only: the values may include the BMC password.
            record(
                obj,
                EventKind.UPDATED,
                actor=request.user,
                message=f"Changed in the admin: {', '.join(form.changed_data)}",
                data={"fields": form.changed_data},
            )
        if "bmc_plain_http_reason" in form.changed_data:
            record_plain_http_mark(obj, actor=request.user)

    def get_urls(self):
        own = [
            path(
                "enroll-csv/",
                # csrf_exempt here only so that the upload handler is set before the body is
                # read; the view checks the CSRF token itself (csrf_protect below).
                self.admin_site.admin_view(csrf_exempt(self.enroll_csv_view)),
                name="fleet_node_enroll_csv",
            ),
        ]
        return own + super().get_urls()

    def enroll_csv_view(self, request: HttpRequest):
        """Upload a CSV of nodes: every row is validated, then all are enrolled or none."""
        handler = InMemoryUploadHandler(request)
        request.upload_handlers = [handler]
        return csrf_protect(self._enroll_csv)(request, handler)

    def _enroll_csv(self, request: HttpRequest, handler: InMemoryUploadHandler):
        if not self.has_add_permission(request):
            raise PermissionDenied
        report = None
        if request.method == "POST":
            form = EnrollCsvForm(request.POST, request.FILES)
        else:
            form = EnrollCsvForm()
        if form.is_bound and handler.too_large:
            form.full_clean()
            form.add_error(None, f"The file is larger than {MAX_CSV_BYTES:,} bytes.")
        if request.method == "POST" and form.is_valid():
            upload = request.FILES["file"]
            report = enroll_csv(form.cleaned_data["file"], actor=request.user, source=upload.name)
            if report.ok:
                self.message_user(request, report.summary(), messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:fleet_node_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Enroll nodes from CSV",
            "form": form,
            "report": report,
            "columns": COLUMNS,
        }
        return TemplateResponse(request, "admin/fleet/node/enroll_csv.html", context)


@admin.register(Component)
class ComponentAdmin(admin.ModelAdmin):
    list_display = [
        "node",
        "kind",
        "slot",
        "model",
        "serial",
        "firmware_version",
        "source",
        "observed_at",
    ]
    list_filter = ["kind", "source"]
    list_select_related = ["node"]
    search_fields = ["node__serial", "serial", "model", "firmware_version"]
    raw_id_fields = ["node"]


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """The audit log: append-only, so the admin only reads it."""

    list_display = ["created_at", "kind", "node", "author", "message"]
    list_filter = ["kind"]
    list_select_related = ["node", "actor"]
    search_fields = ["node__serial", "message"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Manifest)
class ManifestAdmin(VersionedDocumentAdminMixin, admin.ModelAdmin):
    pass


@admin.register(NvlinkDomain)
class NvlinkDomainAdmin(admin.ModelAdmin):
    list_display = ["name", "description", "created_at"]
    search_fields = ["name"]


@admin.register(RackSystem)
class RackSystemAdmin(admin.ModelAdmin):
    """A rack that is one rack-scale system; its state moves only through rack_lifecycle."""

    list_display = ["rack", "sku", "domain", "state", "state_changed_at", "attention"]
    list_filter = ["state", "sku"]
    list_select_related = ["rack__site", "sku", "domain"]
    readonly_fields = ["state", "state_changed_at"]
