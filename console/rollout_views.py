"""The rollout pages: every rollout, one rollout's progress, and pausing, resuming or cancelling it.

Thin shells over provisioning.day2.rollouts, which checks the permission (the one that reprovisions).
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from provisioning.day2 import rollout_report, rollouts
from provisioning.models import Rollout

from .views import viewer

RECENT = 50
STEERS = {
    "pause": rollouts.pause_rollout,
    "resume": rollouts.resume_rollout,
    "cancel": rollouts.cancel_rollout,
}


@viewer
def rollout_list(request: HttpRequest) -> HttpResponse:
    """The most recent rollouts, newest first."""
    recent = Rollout.objects.select_related("manifest__sku", "created_by")[:RECENT]
    return render(request, "console/rollouts.html", {"rollouts": recent})


@viewer
def rollout_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One rollout: N of M done, in flight, waiting, failed with reasons."""
    rollout = get_object_or_404(
        Rollout.objects.select_related("manifest__sku", "created_by"), pk=pk
    )
    report = rollout_report.report(rollout)
    context = {
        "progress": rollouts.progress(rollout),
        "report": report,
        "roll_back_count": sum(n.roll_back for wave in report for n in wave.nodes),
        "roll_back_to": rollout_report.previous_manifest(rollout),
    }
    return render(request, "console/rollout.html", context)


class SteerForm(forms.Form):
    reason = forms.CharField(required=False, max_length=300)


@login_required
@require_POST
def rollout_roll_back(request: HttpRequest, pk: int) -> HttpResponse:
    """Roll back the nodes the report names (or those ticked) to the previous manifest."""
    rollout = get_object_or_404(Rollout.objects.select_related("manifest__sku"), pk=pk)
    picked = [int(v) for v in request.POST.getlist("node") if v.isdigit()] or None
    try:
        back = rollout_report.roll_back(rollout, picked, actor=request.user)
    except rollouts.RolloutRefused as exc:
        messages.error(request, str(exc))
        return redirect("console:rollout", pk=pk)
    messages.success(
        request,
        f"Rollout {back.pk} returns {back.entries.count()} node(s) to {back.manifest.version}.",
    )
    return redirect("console:rollout", pk=back.pk)


@login_required
@require_POST
def rollout_steer(request: HttpRequest, pk: int, verb: str) -> HttpResponse:
    """Pause, resume or cancel a rollout."""
    steer = STEERS.get(verb)
    if steer is None:
        raise Http404(f"no such action {verb!r}: pause, resume or cancel")
    rollout = get_object_or_404(Rollout, pk=pk)
    form = SteerForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    kwargs = {} if verb == "resume" else {"reason": reason}
    # PermissionDenied goes up: Django answers it 403.
    try:
        rollout = steer(rollout, actor=request.user, **kwargs)
    except rollouts.RolloutRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Rollout {rollout.pk} is {rollout.get_state_display().lower()}.")
    return redirect("console:rollout", pk=pk)
