"""Operator actions on a run as POST actions: retry, skip a phase, abort.

Thin: the rules (permissions, reasons, states) are provisioning.core.runs', shared with everything else.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from provisioning.core.runs import RunError, abort_run, retry_run, skip_phase


class RunActionSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    phase = serializers.CharField(required=False, default="")


class RunStateSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    status = serializers.CharField()
    detail = serializers.CharField()


class RunActionsMixin:
    """POST /runs/<id>/retry/, skip/ (with phase and reason), abort/ (with reason)."""

    def _act(self, request, act):
        run = self.get_object()
        form = RunActionSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            act(run, request.user, form.validated_data)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except RunError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        run.refresh_from_db()
        return Response({"run": run.pk, "status": run.status, "detail": "done"})

    @extend_schema(request=RunActionSerializer, responses={200: RunStateSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def retry(self, request, pk=None):
        return self._act(
            request, lambda run, user, d: retry_run(run, actor=user, reason=d["reason"])
        )

    @extend_schema(request=RunActionSerializer, responses={200: RunStateSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def skip(self, request, pk=None):
        return self._act(
            request,
            lambda run, user, d: skip_phase(run, d["phase"], actor=user, reason=d["reason"]),
        )

    @extend_schema(request=RunActionSerializer, responses={200: RunStateSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def abort(self, request, pk=None):
        return self._act(
            request, lambda run, user, d: abort_run(run, actor=user, reason=d["reason"])
        )
