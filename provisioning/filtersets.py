"""Filters of the provisioning lists, shared by the API."""

from __future__ import annotations

import django_filters

from greenlight.api.filters import DateTimeFilter, IdFilter

from .choices import CertificateResult, RunKind, RunStatus, WipeStatus
from .models import Run, WipeCertificate, WipeRequest


class RunFilterSet(django_filters.FilterSet):
    node = IdFilter(field_name="node")
    serial = django_filters.CharFilter(field_name="node__serial")
    rack = IdFilter(field_name="node__rack")
    kind = django_filters.MultipleChoiceFilter(choices=RunKind.choices)
    status = django_filters.MultipleChoiceFilter(choices=RunStatus.choices)
    manifest_version = django_filters.CharFilter(field_name="manifest__version")
    since = DateTimeFilter(field_name="created_at", lookup_expr="gte")

    class Meta:
        model = Run
        fields = ["node", "kind", "status"]


class WipeRequestFilterSet(django_filters.FilterSet):
    status = django_filters.MultipleChoiceFilter(choices=WipeStatus.choices)
    node = IdFilter(field_name="nodes", distinct=True)

    class Meta:
        model = WipeRequest
        fields = ["tenant", "allocation_ref", "status"]


class WipeCertificateFilterSet(django_filters.FilterSet):
    node = IdFilter(field_name="node")
    serial = django_filters.CharFilter(field_name="node__serial")
    wipe_request = IdFilter(field_name="wipe_request")
    result = django_filters.MultipleChoiceFilter(choices=CertificateResult.choices)

    class Meta:
        model = WipeCertificate
        fields = ["node", "wipe_request", "result"]
