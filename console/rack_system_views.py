"""The rack page's decisions on a rack-scale system: approve the rack in one click, or
quarantine it with a reason. They parse, call acceptance.rack_decisions (which checks the role,
the rack's state, its fabric verdict and its members) and go back to the rack with what happened.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from acceptance import rack_decisions
from acceptance.decisions import DecisionRefused
from fleet.models import RackSystem


class RackReasonForm(forms.Form):
    reason = forms.CharField(required=False, max_length=2000, widget=forms.Textarea)


def _decide(request: HttpRequest, pk: int, act, done: str) -> HttpResponse:
    system = get_object_or_404(RackSystem.objects.select_related("rack"), rack_id=pk)
    form = RackReasonForm(request.POST)
    form.is_valid()
    try:
        made = act(system, request.user, form.cleaned_data.get("reason", ""))
    except DecisionRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Rack {system.rack.name}: {done}, {len(made.decisions)} members with it."
        )
    return redirect("console:rack", pk=pk)


@login_required
@require_POST
def approve_rack(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve the rack-scale system and every member into service: one click, one decision."""
    return _decide(request, pk, rack_decisions.approve_rack, "approved into service")


@login_required
@require_POST
def quarantine_rack(request: HttpRequest, pk: int) -> HttpResponse:
    """Quarantine the rack-scale system and every member, with a reason; the rack is degraded."""
    return _decide(request, pk, rack_decisions.quarantine_rack, "quarantined, the rack degraded")
