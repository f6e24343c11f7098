"""Filters of every list the API serves: the same FilterSets serve the API and the CSV export."""

from __future__ import annotations

import django_filters
from django.db.models import Exists, OuterRef, Q

from acceptance.choices import DecisionKind, Verdict
from acceptance.gates import gate_choices
from acceptance.models import AcceptanceProfile, Decision, GateResult
from common.api.filters import DateTimeFilter, IdFilter
from fleet.choices import ComponentKind, DocumentStatus, EventKind, NodeState
from fleet.models import Event, Manifest, Node, Rack, Site, Sku
from provisioning.choices import CertificateResult, RunKind, RunStatus, WipeStatus
from provisioning.models import Run, WipeCertificate, WipeRequest


class SiteFilterSet(django_filters.FilterSet):
    class Meta:
        model = Site
        fields = {"name": ["exact", "icontains"]}


class RackFilterSet(django_filters.FilterSet):
    class Meta:
        model = Rack
        fields = {"name": ["exact", "icontains"], "site": ["exact"], "site__name": ["exact"]}


class SkuFilterSet(django_filters.FilterSet):
    class Meta:
        model = Sku
        fields = {"name": ["exact", "icontains"]}


class PlacedNodeFilters(django_filters.FilterSet):
    """Nodes by state and by where they are: site, rack and SKU, each by id or name."""

    state = django_filters.MultipleChoiceFilter(choices=NodeState.choices)
    site = IdFilter(field_name="rack__site")
    site_name = django_filters.CharFilter(field_name="rack__site__name")
    rack = IdFilter(field_name="rack")
    rack_name = django_filters.CharFilter(field_name="rack__name")
    sku = IdFilter(field_name="sku")
    sku_name = django_filters.CharFilter(field_name="sku__name")


class NodeFilterSet(PlacedNodeFilters):
    """state, site, rack, SKU, manifest version, last verdict, changed since."""

    serial = django_filters.CharFilter()
    q = django_filters.CharFilter(method="filter_q", label="Serial or hostname contains")
    manifest_version = django_filters.CharFilter(field_name="manifest__version")
    last_verdict = django_filters.MultipleChoiceFilter(
        choices=Verdict.choices, label="Worst verdict of the latest run with gate results"
    )
    changed_since = DateTimeFilter(
        method="filter_changed_since",
        label="State changed, or any event recorded, at or after this time (ISO 8601)",
    )
    component_kind = django_filters.ChoiceFilter(
        choices=ComponentKind.choices, field_name="components__kind", distinct=True
    )
    component_serial = django_filters.CharFilter(field_name="components__serial", distinct=True)

    class Meta:
        model = Node
        fields = ["tenant"]

    def filter_q(self, queryset, name, value):
        return queryset.filter(Q(serial__icontains=value) | Q(hostname__icontains=value))

    def filter_changed_since(self, queryset, name, value):
        recent = Event.objects.filter(node=OuterRef("pk"), created_at__gte=value)
        return queryset.filter(Q(state_changed_at__gte=value) | Exists(recent))


class FirmwareFilterSet(PlacedNodeFilters):
    """The nodes the fleet firmware view counts: by site, rack, SKU and state. Decommissioned
    nodes have left the fleet and are counted only when a state filter asks for them."""

    class Meta:
        model = Node
        fields: list[str] = []

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        if not self.form.cleaned_data.get("state"):
            queryset = queryset.exclude(state=NodeState.DECOMMISSIONED)
        return queryset


class DocumentFilterSet(django_filters.FilterSet):
    sku = IdFilter(field_name="sku")
    sku_name = django_filters.CharFilter(field_name="sku__name")
    status = django_filters.MultipleChoiceFilter(choices=DocumentStatus.choices)
    version = django_filters.CharFilter()


class ManifestFilterSet(DocumentFilterSet):
    class Meta:
        model = Manifest
        fields = ["sku", "status", "version"]


class EventFilterSet(django_filters.FilterSet):
    node = IdFilter(field_name="node")
    serial = django_filters.CharFilter(field_name="node__serial")
    rack = IdFilter(field_name="rack")
    kind = django_filters.MultipleChoiceFilter(choices=EventKind.choices)
    since = DateTimeFilter(field_name="created_at", lookup_expr="gte")
    after_id = IdFilter(field_name="id", lookup_expr="gt")

    class Meta:
        model = Event
        fields = ["node", "rack", "kind"]


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
