"""Django admin of acceptance: profiles are edited like manifests; results and decisions are read."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from common.admin import ReadOnlyMixin
from fleet.admin_documents import VersionedDocumentAdminMixin, html_unified_diff
from fleet.measured_boot import selector_of
from provisioning.agents.redaction import redactor_for

from .golden import GoldenRefused, pin_golden, plan_golden
from .models import AcceptanceProfile, Decision, GateResult, TpmBinding


@admin.register(AcceptanceProfile)
class AcceptanceProfileAdmin(VersionedDocumentAdminMixin, admin.ModelAdmin):
    pass


class ReadOnlyAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Rows written by the pipeline or by people through the UI: the admin only shows them."""


@admin.register(GateResult)
class GateResultAdmin(ReadOnlyAdmin):
    list_display = ["node", "run", "gate", "verdict", "started_at", "finished_at"]
    list_filter = ["gate", "verdict"]
    list_select_related = ["node", "run"]
    search_fields = ["node__serial"]
    actions = ["record_golden"]
    # What a result's page shows of what its node sent: redacted (provisioning.agents.redaction).
    NODE_TEXT_FIELDS = ("raw_output", "metrics", "findings", "tool_versions")

    def get_object(self, request: HttpRequest, object_id: str, from_field=None):
        """The result to show, its node's secrets taken out of what its tools printed.

        Only shown, never saved: this admin changes nothing (ReadOnlyAdmin), and the row keeps
        the output as the node sent it.
        """
        result = super().get_object(request, object_id, from_field)
        if result is not None:
            redact = redactor_for(result.node)
            for name in self.NODE_TEXT_FIELDS:
                setattr(result, name, redact.tree(getattr(result, name)))
        return result

    def has_pin_golden_permission(self, request: HttpRequest) -> bool:
        # Golden values are manifest content: whoever may write a manifest draft may pin them.
        return request.user.has_perms(["fleet.add_manifest", "fleet.change_manifest"])

    @admin.action(
        description="Record golden measurements from this reference node",
        permissions=["pin_golden"],
    )
    def record_golden(self, request: HttpRequest, queryset):
        """Show what one attestation result would pin; pin it into a new draft on confirmation."""
        if queryset.count() != 1:
            self.message_user(
                request, "Select one attestation result: the reference node's.", messages.ERROR
            )
            return None
        result = queryset.select_related("node__sku", "run__manifest").get()
        try:
            plan = plan_golden(result)
        except GoldenRefused as exc:
            self.message_user(request, f"Cannot record golden values: {exc}.", messages.ERROR)
            return None
        if request.POST.get("pin") == "yes":
            try:
                draft = pin_golden(plan, actor=request.user)
            except ValidationError as exc:
                self.message_user(request, "; ".join(exc.messages), messages.ERROR)
                return None
            self.message_user(
                request,
                f"Golden measurements from {result.node.serial} pinned into draft "
                f"{draft.sku.name} {draft.version}: review it, then publish it.",
                messages.SUCCESS,
            )
            return HttpResponseRedirect(reverse("admin:fleet_manifest_change", args=[draft.pk]))
        rows = [
            {"name": name, "pcr": selector_of(name, spec).pcr, **spec}
            for name, spec in plan.section["measurements"].items()
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Record golden measurements from {result.node.serial}",
            "plan": plan,
            "rows": rows,
            "secure_boot": result.metrics["tpm"].get("secure_boot", "unknown"),
            "diff": html_unified_diff(
                plan.base.yaml_text,
                plan.new_yaml(),
                f"{plan.base.version} ({plan.base.status})",
                "new draft with these golden values",
            ),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/acceptance/gateresult/record_golden.html", context)


@admin.register(TpmBinding)
class TpmBindingAdmin(admin.ModelAdmin):
    """The TPM each node attested with first. Deleting one lets the next attestation bind anew
    (a replaced board); nothing else about it is edited."""

    list_display = ["node", "ek_sha256", "bound_at", "run"]
    list_select_related = ["node", "run"]
    search_fields = ["node__serial", "ek_sha256"]
    readonly_fields = ["node", "ek_sha256", "ek_public", "run", "bound_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "node", "kind", "actor", "override", "reason"]
    list_filter = ["kind", "override"]
    list_select_related = ["node", "actor"]
    search_fields = ["node__serial", "reason"]
