"""API views of the fleet: declarative viewsets over the serializers and filtersets."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from fleet.models import Event, Manifest, Rack, Site, Sku

from .. import filtersets
from ..exports import node_rows, stream_csv
from ..inventory import inventory_nodes
from . import serializers as s
from .node_actions import NodeActionsMixin, RackActionsMixin
from .rollout_views import ManifestRolloutMixin

# No DELETE anywhere: inventory rows are protected by runs and events, and documents are retired,
# not deleted.
WRITE_METHODS = ["get", "post", "put", "patch", "head", "options"]


class SiteViewSet(viewsets.ModelViewSet):
    queryset = Site.objects.all()
    serializer_class = s.SiteSerializer
    filterset_class = filtersets.SiteFilterSet
    ordering_fields = ["name", "id"]
    ordering = "name"
    http_method_names = WRITE_METHODS


class RackViewSet(RackActionsMixin, viewsets.ModelViewSet):
    queryset = Rack.objects.select_related("site")
    serializer_class = s.RackSerializer
    filterset_class = filtersets.RackFilterSet
    ordering_fields = ["name", "id"]
    ordering = "id"
    http_method_names = WRITE_METHODS


class SkuViewSet(viewsets.ModelViewSet):
    queryset = Sku.objects.all()
    serializer_class = s.SkuSerializer
    filterset_class = filtersets.SkuFilterSet
    ordering_fields = ["name", "id"]
    ordering = "name"
    http_method_names = WRITE_METHODS


class NodeViewSet(NodeActionsMixin, viewsets.ReadOnlyModelViewSet):
    """Nodes with their components. State moves only through lifecycle actions, never a PATCH."""

    queryset = inventory_nodes()
    serializer_class = s.NodeSerializer
    filterset_class = filtersets.NodeFilterSet
    # Cursor pagination needs non-null sort keys: position (nullable) is not offered.
    ordering_fields = ["serial", "id", "state_changed_at", "created_at"]
    ordering = "serial"


class CSVRenderer(BaseRenderer):
    """Lets content negotiation accept `text/csv`; the view streams the body itself."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        # Only errors (401, 403, 400) are rendered here; the export streams its own body.
        return json.dumps(data).encode()


class NodeCsvExportView(GenericAPIView):
    """Nodes with their components as CSV, one row per component, streamed."""

    queryset = inventory_nodes()
    filterset_class = filtersets.NodeFilterSet
    renderer_classes = [JSONRenderer, CSVRenderer]
    pagination_class = None

    @extend_schema(
        operation_id="nodes_export_csv",
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR)},
    )
    def get(self, request):
        nodes = self.filter_queryset(self.get_queryset())
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        response = StreamingHttpResponse(
            stream_csv(node_rows(nodes)), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="greenlight-nodes-{stamp}.csv"'
        return response


class DocumentViewSet(
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.ReadOnlyModelViewSet,
):
    """Versioned YAML documents: fleet admins create and edit drafts, then publish them."""

    filterset_class = filtersets.ManifestFilterSet
    ordering_fields = ["id", "created_at"]
    ordering = "-id"

    def perform_create(self, serializer):
        serializer.save(created_by=self.request.user)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        """Publish this draft; the SKU's previously published version is retired."""
        document = self.get_object()
        opts = document._meta
        if not request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}"):
            raise PermissionDenied()
        try:
            document.publish(actor=request.user)
        except DjangoValidationError as exc:
            raise serializers.ValidationError({"status": exc.messages}) from None
        return Response(self.get_serializer(document).data)


class ManifestViewSet(ManifestRolloutMixin, DocumentViewSet):
    queryset = Manifest.objects.select_related("sku", "created_by")
    serializer_class = s.ManifestSerializer
    filterset_class = filtersets.ManifestFilterSet


class EventViewSet(viewsets.ReadOnlyModelViewSet):
    """The append-only audit log of every node."""

    queryset = Event.objects.select_related("node", "rack__site", "actor")
    serializer_class = s.EventSerializer
    filterset_class = filtersets.EventFilterSet
    ordering_fields = ["id"]
    ordering = "-id"
