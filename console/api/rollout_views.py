"""Rollouts over the API: start one on a published manifest, read its progress, steer it.

GET /manifests/<id>/behind/ lists the nodes a manifest puts behind (a publish's preview), a page
at a time; POST /manifests/<id>/rollouts/ {"concurrency": 2} starts one (201), in waves with "canary",
"wave_growth", "failure_threshold_pct", "site_cap" and "rack_cap" (day2/waves.py); /rollouts/ lists them with
their nodes; POST /rollouts/<id>/pause/, resume/, cancel/ steer one. provisioning.day2.rollouts checks
the right to reprovision (fleet.start_run) and the concurrency; these views parse and render.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from common.api.fields import ChoiceField
from common.api.pagination import NodePagePagination
from common.api.serializers import BriefUserSerializer
from fleet.choices import NodeState
from provisioning.choices import RolloutNodeStatus, RolloutState
from provisioning.day2 import rollout_report, rollouts, waves
from provisioning.day2.behind import behind_nodes
from provisioning.models import Rollout, RolloutNode

from .node_actions import REFUSED
from .run_serializers import BriefRunSerializer
from .serializers import BriefManifestSerializer, BriefNodeSerializer


class RolloutNodeSerializer(serializers.ModelSerializer):
    node = BriefNodeSerializer(read_only=True)
    status = ChoiceField(choices=RolloutNodeStatus.choices, read_only=True)
    run = BriefRunSerializer(read_only=True, allow_null=True)

    class Meta:
        model = RolloutNode
        fields = ["node", "order", "wave", "status", "run", "reason", "started_at", "finished_at"]
        read_only_fields = fields


class RolloutSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:rollout-detail")
    manifest = BriefManifestSerializer(read_only=True)
    state = ChoiceField(choices=RolloutState.choices, read_only=True)
    created_by = BriefUserSerializer(read_only=True, allow_null=True)
    nodes = RolloutNodeSerializer(source="entries", many=True, read_only=True)

    class Meta:
        model = Rollout
        fields = [
            "id",
            "url",
            "manifest",
            "concurrency",
            "canary",
            "wave_growth",
            "failure_threshold_pct",
            "site_cap",
            "rack_cap",
            "state",
            "reason",
            "created_by",
            "created_at",
            "finished_at",
            "nodes",
        ]
        read_only_fields = fields


class RolloutStartSerializer(serializers.Serializer):
    # Any JSON: the service says what is wanted of a value that is not a whole number in range.
    concurrency = serializers.JSONField(
        required=False,
        allow_null=True,
        default=rollouts.DEFAULT_CONCURRENCY,
        help_text=f"Most nodes in flight at once, 1 to {rollouts.MAX_CONCURRENCY}",
    )
    canary = serializers.JSONField(
        required=False, allow_null=True, help_text="Nodes in the first wave; 0 or none: no waves"
    )
    wave_growth = serializers.JSONField(
        required=False, allow_null=True, help_text="Each wave this many times the one before"
    )
    failure_threshold_pct = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Pause when a finished wave failed more than this percent of its nodes",
    )
    site_cap = serializers.JSONField(
        required=False, allow_null=True, help_text="Most nodes of one site in flight"
    )
    rack_cap = serializers.JSONField(
        required=False, allow_null=True, help_text="Most nodes of one rack in flight"
    )


class RollBackSerializer(serializers.Serializer):
    nodes = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        allow_null=True,
        max_length=10_000,
        help_text="Node ids of this rollout; none: the report's roll-back list (its failed nodes)",
    )


class SteerSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=300)


class BehindNodeSerializer(BriefNodeSerializer):
    rack = serializers.CharField(source="rack.name", default=None, read_only=True)
    state = ChoiceField(choices=NodeState.choices, read_only=True)

    class Meta(BriefNodeSerializer.Meta):
        fields = [*BriefNodeSerializer.Meta.fields, "rack", "position", "state"]


class BehindSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="Nodes behind, on every page")
    next = serializers.URLField(allow_null=True, help_text="The next page (`?page=N`)")
    previous = serializers.URLField(allow_null=True)
    nodes = BehindNodeSerializer(many=True, help_text="One page of them, 200 unless page_size")


class ManifestRolloutMixin:
    """GET /manifests/<id>/behind/: the nodes it puts (or has put) behind; the API's preview of
    a publish. POST /manifests/<id>/rollouts/: bring them to this published manifest."""

    @extend_schema(
        request=None,
        parameters=[
            OpenApiParameter("page", int, description="A page number, from 1"),
            OpenApiParameter("page_size", int, description="Nodes a page, up to 1000"),
        ],
        responses={200: BehindSerializer},
    )
    @action(detail=True, methods=["get"])
    def behind(self, request, pk=None):
        # A page at a time: a new manifest for a SKU of thousands of nodes puts them all behind.
        paginator = NodePagePagination()
        page = paginator.paginate_queryset(behind_nodes(self.get_object()), request, view=self)
        body = {
            "count": paginator.page.paginator.count,
            "next": paginator.get_next_link(),
            "previous": paginator.get_previous_link(),
            "nodes": page,
        }
        return Response(BehindSerializer(body, context={"request": request}).data)

    @extend_schema(request=RolloutStartSerializer, responses={201: RolloutSerializer, 400: REFUSED})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def rollouts(self, request, pk=None):
        manifest = self.get_object()
        form = RolloutStartSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            policy = waves.parse_policy(form.validated_data)
        except waves.BadWaves as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        try:
            rollout = rollouts.start_rollout(
                manifest,
                actor=request.user,
                concurrency=form.validated_data["concurrency"],
                policy=policy,
            )
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except rollouts.BadConcurrency as exc:
            return Response({"concurrency": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        except rollouts.RolloutRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        body = RolloutSerializer(rollout, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class RolloutViewSet(viewsets.ReadOnlyModelViewSet):
    """Rolling upgrades with their nodes, newest first; pause, resume and cancel as POSTs."""

    queryset = Rollout.objects.select_related("manifest__sku", "created_by").prefetch_related(
        "entries__node", "entries__run"
    )
    serializer_class = RolloutSerializer
    ordering_fields = ["id", "created_at"]
    ordering = "-id"

    def _steer(self, request, steer, *, with_reason: bool = True):
        rollout = self.get_object()
        form = SteerSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        kwargs = {"reason": form.validated_data["reason"]} if with_reason else {}
        try:
            rollout = steer(rollout, actor=request.user, **kwargs)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except rollouts.RolloutRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(rollout).data)

    @extend_schema(request=SteerSerializer, responses={200: RolloutSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def pause(self, request, pk=None):
        """Start no new node; runs in flight go on."""
        return self._steer(request, rollouts.pause_rollout)

    @extend_schema(request=None, responses={200: RolloutSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def resume(self, request, pk=None):
        """Go on starting nodes where the paused rollout stood."""
        return self._steer(request, rollouts.resume_rollout, with_reason=False)

    @extend_schema(request=SteerSerializer, responses={200: RolloutSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def cancel(self, request, pk=None):
        """End the rollout: no new node starts; runs in flight finish."""
        return self._steer(request, rollouts.cancel_rollout)

    @extend_schema(request=None, responses={200: dict})
    @action(detail=True, methods=["get"])
    def report(self, request, pk=None):
        """Per wave and node: versions from and to per component, time taken, failures in the
        BMC's words, and which nodes to roll back."""
        rollout = self.get_object()
        waves_done = [wave.as_dict() for wave in rollout_report.report(rollout)]
        previous = rollout_report.previous_manifest(rollout)
        return Response(
            {
                "rollout": rollout.pk,
                "state": rollout.state,
                "reason": rollout.reason,
                "waves": waves_done,
                "roll_back": [n["node"] for w in waves_done for n in w["detail"] if n["roll_back"]],
                "roll_back_to": previous.version if previous else None,
            }
        )

    @extend_schema(request=RollBackSerializer, responses={201: RolloutSerializer, 400: REFUSED})
    @action(
        detail=True, methods=["post"], url_path="roll_back", permission_classes=[IsAuthenticated]
    )
    def roll_back(self, request, pk=None):
        """Return nodes of this rollout to the manifest published before its own."""
        rollout = self.get_object()
        form = RollBackSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            back = rollout_report.roll_back(
                rollout, form.validated_data.get("nodes"), actor=request.user
            )
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except rollouts.RolloutRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        body = RolloutSerializer(back, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)
