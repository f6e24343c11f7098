"""API views of rack-scale systems and NVLink domains: read-only lists and details, and the
rack's decisions as POST actions (/rack-systems/<id>/approve/, /quarantine/), whose rules live
in acceptance.rack_decisions, shared with the rack page."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from acceptance.decisions import DecisionConflict, DecisionRefused
from acceptance.rack_decisions import approve_rack, quarantine_rack
from fleet.choices import MEMBER_KINDS, NodeState
from fleet.models import Node, NvlinkDomain, RackSystem

from . import rack_system_serializers as s
from .node_actions import REFUSED, DecisionConflictSerializer


class RackReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class RackDecisionResultSerializer(serializers.Serializer):
    rack_system = serializers.IntegerField()
    state = serializers.CharField()
    detail = serializers.CharField()
    members = serializers.DictField(
        child=serializers.IntegerField(), help_text="serial -> decision id"
    )


RACK_DECISION_RESPONSES = {
    200: RackDecisionResultSerializer,
    400: REFUSED,
    409: DecisionConflictSerializer,
}


def member_nodes() -> Prefetch:
    """A system's members as RackSystem.members() lists them, prefetched for a whole page."""
    members = (
        Node.objects.filter(kind__in=MEMBER_KINDS)
        .exclude(state=NodeState.DECOMMISSIONED)
        .order_by("kind", "member_index")
    )
    return Prefetch("rack__nodes", queryset=members, to_attr="member_list")


class RackSystemViewSet(viewsets.ReadOnlyModelViewSet):
    """Rack-scale systems with their members and the NVLink domain's fabric status. The state
    moves only through the rack's lifecycle (a rack run, a decision), never a PATCH."""

    queryset = RackSystem.objects.select_related("rack__site", "sku", "domain").prefetch_related(
        "sku__members", member_nodes()
    )
    serializer_class = s.RackSystemSerializer
    filterset_fields = {"state": ["exact"], "domain": ["exact"], "sku": ["exact"]}
    ordering_fields = ["id"]
    ordering = "id"

    def _decide(self, request, decide, done: str):
        system = self.get_object()
        form = RackReasonSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            made = decide(system, request.user, form.validated_data["reason"])
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except DecisionConflict as exc:
            lost = {"detail": str(exc), "state": exc.state, "winner": None}
            return Response(DecisionConflictSerializer(lost).data, status=status.HTTP_409_CONFLICT)
        except DecisionRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        system.refresh_from_db()
        body = {
            "rack_system": system.pk,
            "state": system.state,
            "detail": f"rack {system.rack.name} {done}",
            "members": {d.node.serial: d.pk for d in made.decisions},
        }
        return Response(body)

    @extend_schema(request=RackReasonSerializer, responses=RACK_DECISION_RESPONSES)
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def approve(self, request, pk=None):
        """Approve the rack and every member into service as one decision."""
        return self._decide(request, approve_rack, "approved")

    @extend_schema(request=RackReasonSerializer, responses=RACK_DECISION_RESPONSES)
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def quarantine(self, request, pk=None):
        """Quarantine the rack and every member as one decision (reason required)."""
        return self._decide(request, quarantine_rack, "quarantined")


class NvlinkDomainViewSet(viewsets.ReadOnlyModelViewSet):
    """NVLink domains and the rack-scale systems in each."""

    queryset = NvlinkDomain.objects.prefetch_related("systems__rack__site")
    serializer_class = s.NvlinkDomainSerializer
    filterset_fields = {"name": ["exact"]}
    ordering_fields = ["id", "name"]
    ordering = "name"
