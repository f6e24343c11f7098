"""The fleet firmware page: versions per component kind and model, wanted and behind, filtered.

A thin shell over console.firmware; the filters are the API's (console.filtersets), so the page,
GET /api/v1/firmware/ and its CSV export answer the same query string with the same rows.
"""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from fleet.choices import NodeState
from fleet.models import Node, Rack, Site, Sku

from .filtersets import FirmwareFilterSet
from .firmware import by_model, firmware_rows
from .views import viewer


class FirmwareFilter(forms.Form):
    """The page's choices for the filters the FirmwareFilterSet reads (by id)."""

    site = forms.ChoiceField(required=False)
    rack = forms.ChoiceField(required=False)
    sku = forms.ChoiceField(required=False)
    state = forms.ChoiceField(choices=[("", "Any state")] + NodeState.choices, required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        sites = Site.objects.values_list("pk", "name")
        racks = Rack.objects.values_list("pk", "site__name", "name")
        skus = Sku.objects.values_list("pk", "name")
        self.fields["site"].choices = [("", "Any site")] + [(str(p), n) for p, n in sites]
        self.fields["rack"].choices = [("", "Any rack")] + [
            (str(p), f"{s}/{n}") for p, s, n in racks
        ]
        self.fields["sku"].choices = [("", "Any SKU")] + [(str(p), n) for p, n in skus]


@viewer
def firmware_view(request: HttpRequest) -> HttpResponse:
    """Firmware across the fleet (or the filtered part of it)."""
    nodes = FirmwareFilterSet(request.GET, queryset=Node.objects.all()).qs
    rows = firmware_rows(nodes)
    context = {
        "form": FirmwareFilter(request.GET or None),
        "models": by_model(rows),
        "nodes_behind": len({s for r in rows for s in r.behind_serials}),
    }
    return render(request, "console/firmware.html", context)
