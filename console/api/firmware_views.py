"""The fleet firmware view over the API: GET /firmware/ (JSON) and /firmware/export.csv.

Both read console.firmware's rows for the nodes the filters keep (site, rack, SKU, state), read
only, with the node view permission. The rows are one per running version, so their number
follows the versions in the fleet, not its size: they come whole, as one array, not in pages.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils import timezone
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from fleet.models import Node

from ..exports import stream_csv
from ..filtersets import FirmwareFilterSet
from ..firmware import csv_rows, firmware_rows
from .views import CSVRenderer


class FirmwareRowSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="Component kind (bmc, bios, hgx, gpu, nic, ...)")
    kind_label = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    version = serializers.CharField(allow_blank=True, help_text="The running version")
    sku = serializers.CharField()
    manifest_version = serializers.CharField(
        allow_blank=True, help_text="The manifest the nodes are on; empty: none yet"
    )
    wanted = serializers.CharField(
        allow_blank=True, help_text="The version that manifest wants; empty: it has no target"
    )
    parts = serializers.IntegerField(help_text="Components running this version")
    nodes = serializers.IntegerField(help_text="Nodes with such a component")
    nodes_behind = serializers.IntegerField(help_text="Of those, nodes not on the wanted version")
    behind_serials = serializers.ListField(child=serializers.CharField())


class FirmwareFilterMixin:
    """The nodes the request's filters keep: the same for the JSON and the CSV. Each view holds
    its own `queryset` (the permission read is fleet.view_node): DRF's GenericAPIView.as_view
    marks the object it finds there as never to be evaluated, and a viewset's is read."""

    filterset_class = FirmwareFilterSet
    filter_backends = [DjangoFilterBackend]
    pagination_class = None


class FirmwareViewSet(FirmwareFilterMixin, viewsets.GenericViewSet):
    """Firmware across the fleet: versions per component kind and model, wanted and behind."""

    queryset = Node.objects.all()

    @extend_schema(responses=FirmwareRowSerializer(many=True))
    def list(self, request):
        rows = firmware_rows(self.filter_queryset(self.get_queryset()))
        return Response([row.as_dict() for row in rows])


class FirmwareCsvExportView(FirmwareFilterMixin, GenericAPIView):
    """The firmware view's rows as CSV."""

    queryset = Node.objects.all()

    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(
        operation_id="firmware_export_csv",
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR)},
    )
    def get(self, request):
        rows = firmware_rows(self.filter_queryset(self.get_queryset()))
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        response = StreamingHttpResponse(
            stream_csv(csv_rows(rows)), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="greenlight-firmware-{stamp}.csv"'
        return response
