"""The admin's "Enroll a node from its BMC" form: a thin view over enrollment.enroll_node.

provisioning/admin.py adds it to the node admin as admin:fleet_node_enroll.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import AdminSite
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from fleet.models import Node, Rack, Sku

from ..redfish import RedfishError
from .enrollment import EnrollmentError, enroll_node


class EnrollForm(forms.Form):
    """What enrollment needs: where the BMC is, how to log in, and where the node sits."""

    bmc = forms.URLField(label="BMC URL", help_text="https://host[:port]", assume_scheme="https")
    username = forms.CharField()
    password = forms.CharField(widget=forms.PasswordInput(render_value=False))
    sku = forms.ModelChoiceField(
        Sku.objects.all(), required=False, help_text="Required for a new node"
    )
    rack = forms.ModelChoiceField(Rack.objects.select_related("site"), required=False)
    position = forms.IntegerField(required=False, min_value=1)
    fingerprint = forms.CharField(
        required=False, help_text="Expected SHA-256 fingerprint; empty pins what the BMC presents"
    )
    plain_http_reason = forms.CharField(
        label="Plain-HTTP reason",
        required=False,
        max_length=300,
        help_text="Only for an http:// BMC, which is refused without it: why it must be reached "
        "over plain HTTP (its password then crosses the network unencrypted). Recorded as an event.",
    )


@permission_required("fleet.add_node", raise_exception=True)
def enroll_view(request: HttpRequest, site: AdminSite = admin.site) -> HttpResponse:
    """Show the form, inside the admin's frame; on POST enroll and go to the node's admin page."""
    form = EnrollForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            result = enroll_node(
                data["bmc"],
                data["username"],
                data["password"],
                sku=data["sku"],
                rack=data["rack"],
                position=data["position"],
                fingerprint=data["fingerprint"] or None,
                actor=request.user,
                plain_http_reason=data["plain_http_reason"],
            )
        except (EnrollmentError, RedfishError, ValueError) as exc:
            # The error names the URL and reason; it never carries the password.
            form.add_error(None, str(exc))
        else:
            verb = "Enrolled" if result.created else "Updated"
            messages.success(
                request, f"{verb} {result.node.serial} ({result.components} components)"
            )
            return HttpResponseRedirect(reverse("admin:fleet_node_change", args=[result.node.pk]))
    context = {
        **site.each_context(request),  # the admin's header, user links and sidebar
        "opts": Node._meta,
        "form": form,
        "title": "Enroll a node from its BMC",
    }
    return render(request, "provisioning/enroll.html", context)
