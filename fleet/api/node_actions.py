"""Lifecycle verbs on a node as POST actions: start a run, approve, quarantine, upload output.

Each one parses, calls the service that checks permissions and acts, and renders; the rules live
in provisioning.runs, acceptance.decisions and acceptance.uploads, shared with the pages.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from acceptance.decisions import DecisionConflict, DecisionRefused, approve, quarantine
from acceptance.parsers import PARSERS
from acceptance.uploads import UploadRefused, upload_output
from fleet.lifecycle import RUN_STARTABLE_STATES
from provisioning.runs import RunError, start_run, start_runs


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    override = serializers.BooleanField(required=False, default=False)


class UploadSerializer(serializers.Serializer):
    tool = serializers.ChoiceField(choices=sorted(PARSERS))
    output = serializers.CharField(allow_blank=True, trim_whitespace=False)


class ActionResultSerializer(serializers.Serializer):
    node = serializers.IntegerField()
    state = serializers.CharField()
    detail = serializers.CharField()


def _done(node, detail: str, code: int = status.HTTP_200_OK) -> Response:
    node.refresh_from_db()
    return Response({"node": node.pk, "state": node.state, "detail": detail}, status=code)


class RackStartSerializer(serializers.Serializer):
    started = serializers.DictField(child=serializers.IntegerField(), help_text="node id -> run id")
    refused = serializers.DictField(child=serializers.CharField(), help_text="node id -> why")


class RackActionsMixin:
    """POST /racks/<id>/start-runs/: start a run on every node of the rack that can take one."""

    @extend_schema(request=None, responses={202: RackStartSerializer})
    @action(
        detail=True, methods=["post"], url_path="start-runs", permission_classes=[IsAuthenticated]
    )
    def start_runs(self, request, pk=None):
        rack = self.get_object()
        nodes = rack.nodes.filter(state__in=RUN_STARTABLE_STATES).select_related("rack", "sku")
        try:
            runs, refused = start_runs(nodes.order_by("position", "pk"), actor=request.user)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        started = {str(node_id): run.pk for node_id, run in runs.items()}
        return Response(
            {"started": started, "refused": {str(k): v for k, v in refused.items()}},
            status=status.HTTP_202_ACCEPTED,
        )


class NodeActionsMixin:
    """POST /nodes/<id>/start-run/, approve/, quarantine/, gate-uploads/."""

    @extend_schema(request=None, responses={202: ActionResultSerializer})
    @action(
        detail=True, methods=["post"], url_path="start-run", permission_classes=[IsAuthenticated]
    )
    def start_run(self, request, pk=None):
        node = self.get_object()
        try:
            run = start_run(node, actor=request.user)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except RunError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return _done(node, f"run {run.pk} started", status.HTTP_202_ACCEPTED)

    @extend_schema(request=ReasonSerializer, responses={200: ActionResultSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def approve(self, request, pk=None):
        return self._decide(request, approve)

    @extend_schema(request=ReasonSerializer, responses={200: ActionResultSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def quarantine(self, request, pk=None):
        return self._decide(request, quarantine)

    def _decide(self, request, decide):
        node = self.get_object()
        form = ReasonSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        kwargs = {"reason": form.validated_data["reason"]}
        if decide is approve:
            kwargs["override"] = form.validated_data["override"]
        try:
            decision = decide(node, request.user, **kwargs)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except DecisionConflict as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except DecisionRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return _done(node, f"{decision.kind} recorded")

    @extend_schema(request=UploadSerializer, responses={201: ActionResultSerializer})
    @action(
        detail=True,
        methods=["post"],
        url_path="gate-uploads",
        permission_classes=[IsAuthenticated],
    )
    def gate_uploads(self, request, pk=None):
        node = self.get_object()
        form = UploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            result = upload_output(
                node, form.validated_data["tool"], form.validated_data["output"], actor=request.user
            )
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except UploadRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        body = {
            "gate_result": result.pk,
            "gate": result.gate,
            "verdict": result.verdict,
            "metrics": result.metrics,
            "findings": result.findings,
            "error": result.metrics.get("error"),
        }
        return Response(body, status=status.HTTP_201_CREATED)
