"""Admin for versioned YAML documents (golden manifests, acceptance profiles).

Drafts are edited as YAML in a monospace text area and validated by the model's clean(), whose
errors name the line and the field. A published or retired version is read-only: the admin offers
"Clone as new draft" instead. "Publish" first shows a preview (the diff against the published
version and what else it changes, `publish_impact`); only its Confirm publishes, retiring the
SKU's previously published version.
"""

from __future__ import annotations

import difflib
from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from .choices import DocumentStatus
from .models import VersionedDocument

YAML_WIDGET = forms.Textarea(
    attrs={
        "rows": 32,
        "cols": 100,
        "spellcheck": "false",
        "class": "yaml-source",
        "style": "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;"
        " width: 100%; white-space: pre; tab-size: 2;",
    }
)

_DIFF_LINE_STYLES = {
    "+": "background:#e6ffec;color:#1a7f37",
    "-": "background:#ffebe9;color:#cf222e",
    "@": "background:#ddf4ff;color:#0969da",
}


def html_unified_diff(old_text: str, new_text: str, old_name: str, new_name: str) -> str:
    """Render a unified diff of two texts as escaped HTML, one coloured line per diff line."""
    lines = list(
        difflib.unified_diff(
            old_text.splitlines(),
            new_text.splitlines(),
            fromfile=old_name,
            tofile=new_name,
            lineterm="",
        )
    )
    if not lines:
        return format_html("<p>{}</p>", f"No difference from {old_name}.")
    body = format_html_join(
        "\n",
        '<span style="{}">{}</span>',
        ((_DIFF_LINE_STYLES.get(line[:1], ""), line) for line in lines),
    )
    return format_html(
        '<pre class="yaml-diff" style="font-family: ui-monospace, monospace; '
        'padding: 8px; border: 1px solid #d0d7de; overflow-x: auto;">{}</pre>',
        body,
    )


class VersionedDocumentForm(forms.ModelForm):
    """Only the YAML is edited; SKU, version and the parsed spec are derived from it."""

    class Meta:
        fields = ["yaml_text"]
        widgets = {"yaml_text": YAML_WIDGET}


class VersionedDocumentAdminMixin:
    """ModelAdmin behaviour shared by Manifest and AcceptanceProfile admins."""

    # What the ModelAdmin this is mixed into provides.
    model: Any
    admin_site: Any

    form = VersionedDocumentForm
    change_form_template: ClassVar[str] = "admin/versioned_document/change_form.html"
    publish_preview_template: ClassVar[str] = "admin/versioned_document/publish_preview.html"
    list_display = ["__str__", "sku", "version", "status_badge", "created_at", "published_at"]
    list_filter = ["status", "sku"]
    list_select_related = ["sku"]
    search_fields = ["version", "sku__name"]
    actions = ["publish_selected"]
    _META_FIELDS = ["sku", "version", "status", "created_by", "created_at", "published_at"]

    @admin.display(description="Status", ordering="status")
    def status_badge(self, obj: VersionedDocument) -> str:
        return format_html(
            '<span class="badge badge-{}">{}</span>',
            obj.get_status_color(),
            obj.get_status_display(),
        )

    @admin.display(description="YAML")
    def yaml_source(self, obj: VersionedDocument) -> str:
        return format_html(
            '<pre class="yaml-source" style="font-family: ui-monospace, monospace;">{}</pre>',
            obj.yaml_text,
        )

    @admin.display(description="Diff against previous version")
    def diff_against_previous(self, obj: VersionedDocument) -> str:
        if obj is None or obj.pk is None:
            return "-"
        previous = obj.previous_version()
        if previous is None:
            return "This is the first version of this SKU."
        return html_unified_diff(
            previous.yaml_text,
            obj.yaml_text,
            f"{previous.version} ({previous.status})",
            f"{obj.version} ({obj.status})",
        )

    @staticmethod
    def _is_draft(obj: VersionedDocument | None) -> bool:
        return obj is None or obj.status == DocumentStatus.DRAFT

    def get_fields(self, request: HttpRequest, obj: VersionedDocument | None = None) -> list[str]:
        if obj is None:
            return ["yaml_text"]
        source = "yaml_text" if self._is_draft(obj) else "yaml_source"
        return [*self._META_FIELDS, source, "diff_against_previous"]

    def get_readonly_fields(
        self, request: HttpRequest, obj: VersionedDocument | None = None
    ) -> list[str]:
        if obj is None:
            return []
        if self._is_draft(obj):
            return [*self._META_FIELDS, "diff_against_previous"]
        return [*self._META_FIELDS, "yaml_source", "diff_against_previous"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        # A published or retired version is frozen: a change is a new version.
        return super().has_change_permission(request, obj) and self._is_draft(obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and self._is_draft(obj)

    def save_model(self, request: HttpRequest, obj: VersionedDocument, form, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    def get_urls(self):
        opts = self.model._meta
        name = f"{opts.app_label}_{opts.model_name}"
        own = [
            path(
                "<int:object_id>/clone/",
                self.admin_site.admin_view(self.clone_view),
                name=f"{name}_clone",
            ),
            path(
                "<int:object_id>/publish/",
                self.admin_site.admin_view(self.publish_view),
                name=f"{name}_publish",
            ),
        ]
        return own + super().get_urls()

    def _change_url(self, obj: VersionedDocument) -> str:
        opts = self.model._meta
        return reverse(
            f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]
        )

    def clone_view(self, request: HttpRequest, object_id: int):
        """POST: copy this version into a new draft with the next patch version."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_add_permission(request):
            raise PermissionDenied
        source = get_object_or_404(self.model, pk=object_id)
        try:
            clone = source.clone_as_draft(actor=request.user)
        except ValidationError as exc:
            self.message_user(request, "; ".join(exc.messages), messages.ERROR)
            return HttpResponseRedirect(self._change_url(source))
        self.log_addition(request, clone, [{"added": {}}])
        self.message_user(
            request,
            f"Cloned {source.version} as draft {clone.version}. Edit it, then publish it.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(self._change_url(clone))

    def publish_view(self, request: HttpRequest, object_id: int):
        """GET, or a POST without `confirm`: the preview. A POST with confirm=yes publishes this
        draft; the SKU's published version is retired."""
        if request.method not in ("GET", "POST"):
            return HttpResponseNotAllowed(["GET", "POST"])
        obj = get_object_or_404(self.model, pk=object_id)
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            self._publish(request, obj)
            return HttpResponseRedirect(self._change_url(obj))
        return self._preview(request, [obj], bulk=False)

    def publish_impact(self, request: HttpRequest, draft: VersionedDocument) -> dict[str, Any]:
        """What publishing `draft` changes beyond the document, for the preview's template.

        Nothing here: the manifest admin of the pipeline adds the nodes it puts behind.
        """
        return {}

    def _preview(self, request: HttpRequest, drafts: list[VersionedDocument], *, bulk: bool):
        """The confirmation page: each draft's diff against the published version, its impact,
        and Confirm (which re-POSTs with the confirmation) or Cancel."""
        items = []
        for draft in drafts:
            current = self.model.current_for(draft.sku)
            diff = (
                html_unified_diff(
                    current.yaml_text,
                    draft.yaml_text,
                    f"{current.version} (published)",
                    f"{draft.version} (draft)",
                )
                if current is not None
                else format_html("<p>{}</p>", f"{draft.sku} has no published version yet.")
            )
            items.append(
                {
                    "document": draft,
                    "current": current,
                    "diff": diff,
                    **self.publish_impact(request, draft),
                }
            )
        opts = self.model._meta
        context = {
            **self.admin_site.each_context(request),
            "opts": opts,
            "title": "Publish " + ", ".join(f"{d.sku} {d.version}" for d in drafts) + "?",
            "items": items,
            "bulk": bulk,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "cancel_url": (
                reverse(f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_changelist")
                if bulk
                else self._change_url(drafts[0])
            ),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.publish_preview_template, context)

    def _publish(self, request: HttpRequest, obj: VersionedDocument) -> bool:
        previous = type(obj).current_for(obj.sku)
        try:
            obj.publish(actor=request.user)
        except ValidationError as exc:
            self.message_user(request, f"{obj}: {'; '.join(exc.messages)}", messages.ERROR)
            return False
        self.log_change(request, obj, "Published.")
        retired = f"; {previous.version} is retired" if previous is not None else ""
        self.message_user(request, f"Published {obj.sku} {obj.version}{retired}.", messages.SUCCESS)
        return True

    @admin.action(description="Publish the selected draft", permissions=["change"])
    def publish_selected(self, request: HttpRequest, queryset):
        """First the preview of every selected draft; its Confirm (post=yes) publishes them."""
        drafts = list(queryset.filter(status=DocumentStatus.DRAFT).select_related("sku"))
        skus = [d.sku_id for d in drafts]
        if len(skus) != len(set(skus)):
            # Publishing two drafts of one SKU would silently retire the first straight away.
            self.message_user(
                request, "Select at most one draft per SKU to publish.", messages.ERROR
            )
            return None
        if len(drafts) != queryset.count():
            self.message_user(
                request,
                "Only drafts can be published; the others were left alone.",
                messages.WARNING,
            )
        if not drafts:
            return None
        if request.POST.get("post") != "yes":
            return self._preview(request, drafts, bulk=True)
        with transaction.atomic():
            for draft in drafts:
                self._publish(request, draft)
        return None

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context.update(
            can_clone=obj is not None and self.has_add_permission(request),
            can_publish=obj is not None
            and self._is_draft(obj)
            and self.has_change_permission(request, obj),
        )
        return super().render_change_form(request, context, add, change, form_url, obj)
