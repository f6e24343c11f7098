"""Filters of the acceptance lists, shared by the API."""

from __future__ import annotations

import django_filters

from fleet.filtersets import DocumentFilterSet
from greenlight.api.filters import DateTimeFilter, IdFilter

from .choices import DecisionKind, Verdict
from .gates import gate_choices
from .models import AcceptanceProfile, Decision, GateResult


class AcceptanceProfileFilterSet(DocumentFilterSet):
    class Meta:
        model = AcceptanceProfile
        fields = ["sku", "status", "version"]


class GateResultFilterSet(django_filters.FilterSet):
    node = IdFilter(field_name="node")
    serial = django_filters.CharFilter(field_name="node__serial")
    rack = IdFilter(field_name="node__rack")
    run = IdFilter(field_name="run")
    gate = django_filters.MultipleChoiceFilter(choices=gate_choices)
    verdict = django_filters.MultipleChoiceFilter(choices=Verdict.choices)
    since = DateTimeFilter(field_name="finished_at", lookup_expr="gte")

    class Meta:
        model = GateResult
        fields = ["node", "run", "gate", "verdict"]


class DecisionFilterSet(django_filters.FilterSet):
    node = IdFilter(field_name="node")
    serial = django_filters.CharFilter(field_name="node__serial")
    kind = django_filters.MultipleChoiceFilter(choices=DecisionKind.choices)
    since = DateTimeFilter(field_name="created_at", lookup_expr="gte")

    class Meta:
        model = Decision
        fields = ["node", "kind", "override"]
