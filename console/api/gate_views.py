"""API views of acceptance profiles, gate results and decisions."""

from __future__ import annotations

from rest_framework import viewsets

from acceptance.models import AcceptanceProfile, Decision, GateResult

from .. import filtersets
from . import gate_serializers as s
from .views import DocumentViewSet


class AcceptanceProfileViewSet(DocumentViewSet):
    queryset = AcceptanceProfile.objects.select_related("sku", "created_by")
    serializer_class = s.AcceptanceProfileSerializer
    filterset_class = filtersets.AcceptanceProfileFilterSet


class GateResultViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = GateResult.objects.select_related("run", "node")
    serializer_class = s.GateResultSerializer
    filterset_class = filtersets.GateResultFilterSet
    ordering_fields = ["id", "finished_at"]
    ordering = "-id"

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action == "list":
            # Raw tool output can be megabytes; the list does not show it, so do not load it.
            queryset = queryset.defer("raw_output")
        return queryset

    def get_serializer_class(self):
        return s.GateResultDetailSerializer if self.action == "retrieve" else s.GateResultSerializer


class DecisionViewSet(viewsets.ReadOnlyModelViewSet):
    """Approvals and quarantines. They are made through the node actions, not created here."""

    queryset = Decision.objects.select_related("node", "run", "actor")
    serializer_class = s.DecisionSerializer
    filterset_class = filtersets.DecisionFilterSet
    ordering_fields = ["id", "created_at"]
    ordering = "-id"
