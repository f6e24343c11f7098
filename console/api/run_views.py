"""API views of runs and certificates (read-only) and of wipe requests (filed here)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from provisioning.day2.wipes.requests import WipeRefused, file_wipe
from provisioning.models import Run, WipeCertificate, WipeRequest

from .. import filtersets
from . import run_serializers as s
from .run_actions import RunActionsMixin


class RunViewSet(RunActionsMixin, viewsets.ReadOnlyModelViewSet):
    """Runs with their phase records, newest first; operator actions as POSTs."""

    queryset = Run.objects.select_related("node", "manifest", "started_by").prefetch_related(
        "phases"
    )
    serializer_class = s.RunSerializer
    filterset_class = filtersets.RunFilterSet
    ordering_fields = ["id", "created_at"]
    ordering = "-id"


def sees_only_own_wipes(user) -> bool:
    """A caller who may not see the fleet's nodes (the tenant platform) sees only its own wipes.

    Otherwise one platform integration could read which nodes another tenant gave back.
    """
    return not user.has_perm("fleet.view_node")


class WipeRequestViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Tenant releases. POST files one (201), or answers 200 with the same request filed before."""

    queryset = WipeRequest.objects.select_related("requested_by", "failed_node").prefetch_related(
        "nodes", "certificates"
    )
    serializer_class = s.WipeRequestSerializer
    filterset_class = filtersets.WipeRequestFilterSet
    ordering_fields = ["id", "created_at"]
    ordering = "-id"

    def get_queryset(self):
        queryset = super().get_queryset()
        if sees_only_own_wipes(self.request.user):
            queryset = queryset.filter(requested_by=self.request.user)
        return queryset

    @extend_schema(
        request=s.WipeRequestCreateSerializer,
        responses={201: s.WipeRequestSerializer, 200: s.WipeRequestSerializer},
    )
    def create(self, request, *args, **kwargs):
        form = s.WipeRequestCreateSerializer(
            data=request.data, context=self.get_serializer_context()
        )
        form.is_valid(raise_exception=True)
        try:
            wipe, created = file_wipe(
                form.validated_data["nodes"],
                form.validated_data["tenant"],
                form.validated_data["allocation_ref"],
                request.user,
            )
        except WipeRefused as exc:
            return Response(
                {"detail": str(exc), "reasons": exc.reasons}, status=status.HTTP_409_CONFLICT
            )
        wipe = self.get_queryset().filter(pk=wipe.pk).first()
        if wipe is None:
            # The same allocation's release, filed before by a caller this one may not read.
            return Response(
                {"detail": "this allocation's release was already filed by another caller"},
                status=status.HTTP_409_CONFLICT,
            )
        body = s.WipeRequestSerializer(wipe, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class WipeCertificateViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = WipeCertificate.objects.select_related("wipe_request", "node", "run")
    serializer_class = s.WipeCertificateSerializer
    filterset_class = filtersets.WipeCertificateFilterSet
    ordering_fields = ["id", "created_at"]
    ordering = "-id"

    def get_queryset(self):
        queryset = super().get_queryset()
        if sees_only_own_wipes(self.request.user):
            queryset = queryset.filter(wipe_request__requested_by=self.request.user)
        return queryset
