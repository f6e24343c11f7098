"""The manifest admin, with what publishing means to the fleet: its preview names the nodes a new
version puts behind, and a published version's page offers to bring them to it (a rollout).

The fleet's manifest admin knows nothing of runs (the fleet sits below the pipeline); this one
replaces it, as provisioning/admin.py does for the node admin.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse

from fleet.admin import ManifestAdmin
from fleet.choices import DocumentStatus
from fleet.models import Manifest

from ..models import Rollout
from . import waves
from .behind import behind_nodes, by_rack
from .rollouts import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    ROLLOUT_PERM,
    RolloutRefused,
    start_rollout,
)

RECENT_ROLLOUTS = 5


class RolloutForm(forms.Form):
    concurrency = forms.CharField(initial=DEFAULT_CONCURRENCY)


def behind_context(manifest: Manifest) -> dict[str, Any]:
    """The nodes `manifest` puts (or has put) behind, counted and grouped by rack."""
    nodes = list(behind_nodes(manifest))
    return {"behind_count": len(nodes), "behind_racks": by_rack(nodes)}


admin.site.unregister(Manifest)


@admin.register(Manifest)
class RollingManifestAdmin(ManifestAdmin):
    change_form_template = "admin/provisioning/manifest_change_form.html"
    publish_preview_template = "admin/provisioning/manifest_publish_preview.html"

    def publish_impact(self, request: HttpRequest, draft) -> dict[str, Any]:
        return behind_context(draft)

    def get_urls(self):
        rollout = path(
            "<int:object_id>/rollout/",
            self.admin_site.admin_view(self.rollout_view),
            name="fleet_manifest_rollout",
        )
        return [rollout, *super().get_urls()]

    def rollout_view(self, request: HttpRequest, object_id: int):
        """POST concurrency: start bringing the nodes behind this manifest to it."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        manifest = get_object_or_404(Manifest.objects.select_related("sku"), pk=object_id)
        if not request.user.has_perm(ROLLOUT_PERM):
            raise PermissionDenied
        try:
            rollout = start_rollout(
                manifest,
                actor=request.user,
                concurrency=request.POST.get("concurrency"),
                policy=waves.parse_policy(request.POST),
            )
        except (RolloutRefused, waves.BadWaves) as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(self._change_url(manifest))
        self.message_user(
            request,
            f"Rollout {rollout.pk} started: {rollout.entries.count()} node(s) to "
            f"{manifest.version}, at most {rollout.concurrency} at a time.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("console:rollout", args=[rollout.pk]))

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and obj.status == DocumentStatus.PUBLISHED:
            context.update(
                behind_context(obj),
                can_roll_out=request.user.has_perm(ROLLOUT_PERM),
                rollout_form=RolloutForm(),
                max_concurrency=MAX_CONCURRENCY,
                rollouts=list(Rollout.objects.filter(manifest=obj)[:RECENT_ROLLOUTS]),
            )
        return super().render_change_form(request, context, add, change, form_url, obj)
