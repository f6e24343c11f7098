"""Pages of tenant release: the wipe requests with a form to file one, and the certificates.

Views parse, authorise, call provisioning.day2.wipes.certificates and render.
"""

from __future__ import annotations

import json
import re

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from fleet.models import Node

from .day2.wipes.certificates import certificate_document
from .day2.wipes.requests import WipeRefused, file_wipe, refusals_for
from .models import WipeCertificate, WipeRequest

can_request = permission_required("provisioning.add_wiperequest", raise_exception=True)
can_read = permission_required("provisioning.view_wipecertificate", raise_exception=True)


class WipeRequestForm(forms.Form):
    """A tenant release as a person files it: nodes by serial, one per line or comma-separated."""

    tenant = forms.CharField(max_length=100)
    allocation_ref = forms.CharField(max_length=100, label="Allocation reference")
    nodes = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), help_text="Node serials or hostnames"
    )
    # Set by the confirmation page: the person has seen the nodes and the tenant named.
    confirm = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def clean_nodes(self) -> list[Node]:
        names = [n for n in re.split(r"[\s,]+", self.cleaned_data["nodes"]) if n]
        found = {n.serial: n for n in Node.objects.filter(serial__in=names)}
        found |= {
            n.hostname: n for n in Node.objects.filter(hostname__in=names).exclude(hostname="")
        }
        unknown = [n for n in names if n not in found]
        if unknown:
            raise forms.ValidationError(f"No node {', '.join(unknown)}.")
        return list({found[n].pk: found[n] for n in names}.values())


@login_required
@can_request
def wipe_requests(request: HttpRequest) -> HttpResponse:
    """The latest wipe requests with their certificates, and the form to file one."""
    form = WipeRequestForm(request.POST or None)
    refusals: list[str] = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        tenant, allocation = data["tenant"].strip(), data["allocation_ref"].strip()
        again = WipeRequest.objects.filter(tenant=tenant, allocation_ref=allocation).exists()
        if not again:
            # Refused now rather than after the confirmation.
            refusals = [r for n in data["nodes"] for r in refusals_for(n, tenant, allocation)]
        if not again and not refusals and not data["confirm"]:
            # Erasing a tenant's drives is not undone: say which nodes, for whom, and ask again.
            context = {"form": form, "nodes": data["nodes"], "data": data}
            return render(request, "provisioning/wipe_confirm.html", context)
    if request.method == "POST" and form.is_valid() and not refusals:
        data = form.cleaned_data
        try:
            wipe, created = file_wipe(
                data["nodes"], data["tenant"], data["allocation_ref"], request.user
            )
        except WipeRefused as exc:
            refusals = exc.reasons
        else:
            verb = "Filed" if created else "Already filed:"
            messages.success(
                request, f"{verb} wipe request {wipe.pk} ({len(data['nodes'])} node(s))."
            )
            return redirect("provisioning:wipes")
    wipes = WipeRequest.objects.select_related("requested_by", "failed_node").prefetch_related(
        "nodes", "certificates__node"
    )[:100]
    context = {"form": form, "refusals": refusals, "wipes": wipes}
    return render(
        request,
        "provisioning/wipes.html",
        context,
        status=400 if request.method == "POST" else 200,
    )


def _certificate(pk: int) -> WipeCertificate:
    return get_object_or_404(
        WipeCertificate.objects.select_related("wipe_request", "node__rack__site", "node__sku"),
        pk=pk,
    )


@login_required
@can_read
def certificate(request: HttpRequest, pk: int) -> HttpResponse:
    """A certificate as a page to print (the print stylesheet drops the navigation)."""
    cert = _certificate(pk)
    return render(
        request,
        "provisioning/certificate.html",
        {"certificate": cert, "document": certificate_document(cert)},
    )


@login_required
@can_read
def certificate_json(request: HttpRequest, pk: int) -> HttpResponse:
    """A certificate as a JSON file to keep."""
    cert = _certificate(pk)
    response = HttpResponse(
        json.dumps(certificate_document(cert), indent=2), content_type="application/json"
    )
    name = f"wipe-certificate-{cert.node.serial}-{cert.pk}.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
