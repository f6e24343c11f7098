"""API views of the provisioning app: runs and wipes, read-only (the engine writes them)."""

from __future__ import annotations

from rest_framework import viewsets

from .. import filtersets
from ..models import Run, WipeCertificate, WipeRequest
from . import serializers as s


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    """Runs with their phase records, newest first."""

    queryset = Run.objects.select_related("node", "manifest", "started_by").prefetch_related(
        "phases"
    )
    serializer_class = s.RunSerializer
    filterset_class = filtersets.RunFilterSet
    ordering_fields = ["id", "created_at"]
    ordering = "-id"


class WipeRequestViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = WipeRequest.objects.select_related("requested_by").prefetch_related(
        "nodes", "certificates"
    )
    serializer_class = s.WipeRequestSerializer
    filterset_class = filtersets.WipeRequestFilterSet
    ordering_fields = ["id", "created_at"]
    ordering = "-id"


class WipeCertificateViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = WipeCertificate.objects.select_related("wipe_request", "node", "run")
    serializer_class = s.WipeCertificateSerializer
    filterset_class = filtersets.WipeCertificateFilterSet
    ordering_fields = ["id", "created_at"]
    ordering = "-id"
