"""Lifecycle verbs on a node as POST actions: start a run, approve, quarantine, upload output,
and every move of provisioning.day2.moves (retry, abort, skip-phase, break-fix, reprovision,
revalidate, decommission).

Each one parses, calls the service that checks permissions and acts, and renders; the rules live
in provisioning.core.runs, provisioning.day2.moves, acceptance.decisions and acceptance.uploads, shared with
the pages.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from acceptance.decisions import DecisionConflict, DecisionRefused, approve
from acceptance.parsers import PARSERS
from acceptance.rack_decisions import quarantine_member
from acceptance.uploads import UploadRefused, UploadTooLarge, upload_output
from fleet.choices import NodeState
from fleet.lifecycle import RUN_STARTABLE_STATES
from fleet.models import Node
from provisioning.core.runs import RunError, start_run, start_runs
from provisioning.day2.moves import MoveRefused, perform


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    override = serializers.BooleanField(required=False, default=False)


class MoveSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    phase = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="skip-phase only: the phase"
    )


class SuspectSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000, help_text="Why the node is suspect")


class UploadSerializer(serializers.Serializer):
    tool = serializers.ChoiceField(choices=sorted(PARSERS))
    output = serializers.CharField(allow_blank=True, trim_whitespace=False)


class ActionResultSerializer(serializers.Serializer):
    node = serializers.IntegerField()
    state = serializers.CharField()
    detail = serializers.CharField()


class GateUploadResultSerializer(serializers.Serializer):
    """What an uploaded tool output became: a gate result on the node, outside any run."""

    gate_result = serializers.IntegerField()
    gate = serializers.CharField()
    verdict = serializers.CharField()
    metrics = serializers.DictField()
    findings = serializers.ListField(child=serializers.DictField())
    error = serializers.CharField(allow_null=True, help_text="Why the output could not be read")


# A refusal (400) is {"detail": why} from the service, or {field: [errors]} from the form.
REFUSED = OpenApiResponse(OpenApiTypes.OBJECT, description="Refused: why, or errors by field")


class DecisionWinnerSerializer(serializers.Serializer):
    decision = serializers.CharField(source="kind")
    actor = serializers.CharField(source="actor.username")
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class DecisionConflictSerializer(serializers.Serializer):
    """A decision that came second: always 409, with where the node is and who decided first."""

    detail = serializers.CharField()
    state = serializers.CharField()
    winner = DecisionWinnerSerializer(allow_null=True)


DECISION_RESPONSES = {
    200: ActionResultSerializer,
    400: REFUSED,
    409: DecisionConflictSerializer,
}


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


def nodes_the_caller_may_name(nodes: QuerySet[Node], user) -> QuerySet[Node]:
    """The nodes a verb may find for this caller.

    One who may not see the fleet (the tenant platform) names only the unallocated in-service
    nodes, the ones it burns in and hands out. Any other is 404, the same as a node that does
    not exist, so walking ids learns no serial, state or tenancy from a refusal: the rule a
    wipe request follows (run_serializers.WipeRequestCreateSerializer names only the tenant's
    own nodes).
    """
    if user.has_perm("fleet.view_node") or not user.has_perm("provisioning.request_burn_in"):
        # Staff see the fleet; a caller with no node verb at all gets each verb's 403, which
        # says nothing of the node.
        return nodes
    return nodes.filter(tenant="", state=NodeState.IN_SERVICE)


class NodeActionsMixin:
    """POST /nodes/<id>/start-run/, approve/, quarantine/, gate-uploads/."""

    def get_queryset(self):
        return nodes_the_caller_may_name(super().get_queryset(), self.request.user)

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

    @extend_schema(request=ReasonSerializer, responses=DECISION_RESPONSES)
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def approve(self, request, pk=None):
        return self._decide(request, approve)

    @extend_schema(request=ReasonSerializer, responses=DECISION_RESPONSES)
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def quarantine(self, request, pk=None):
        # A rack-scale member's quarantine degrades its rack too (a server's is its own).
        return self._decide(request, quarantine_member)

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
            body = {"detail": str(exc), "state": exc.state, "winner": exc.winner}
            return Response(DecisionConflictSerializer(body).data, status=status.HTTP_409_CONFLICT)
        except DecisionRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return _done(node, f"{decision.kind} recorded")

    @extend_schema(
        request=UploadSerializer,
        responses={201: GateUploadResultSerializer, 400: REFUSED, 413: REFUSED},
    )
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
        except UploadTooLarge as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
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

    # -- the moves of provisioning.day2.moves, one verb each ------------------------------------

    def _move(self, request, name: str):
        node = self.get_object()
        form = MoveSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            detail = perform(name, node, request.user, **form.validated_data)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except MoveRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return _done(node, detail)

    @extend_schema(request=MoveSerializer, responses={200: ActionResultSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def retry(self, request, pk=None):
        """Resume the node's failed run at the phase that failed."""
        return self._move(request, "retry")

    @extend_schema(request=MoveSerializer, responses={200: ActionResultSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def abort(self, request, pk=None):
        """Stop the node's active run (reason required)."""
        return self._move(request, "abort")

    @extend_schema(request=MoveSerializer, responses={200: ActionResultSerializer})
    @action(
        detail=True, methods=["post"], url_path="skip-phase", permission_classes=[IsAuthenticated]
    )
    def skip_phase(self, request, pk=None):
        """Skip a phase of the node's run (fleet admin, reason required; default: the stuck one)."""
        return self._move(request, "skip")

    @extend_schema(request=MoveSerializer, responses={200: ActionResultSerializer})
    @action(
        detail=True, methods=["post"], url_path="break-fix", permission_classes=[IsAuthenticated]
    )
    def break_fix(self, request, pk=None):
        """Release a quarantined node to break/fix (reason required)."""
        return self._move(request, "break-fix")

    @extend_schema(request=MoveSerializer, responses={202: ActionResultSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def reprovision(self, request, pk=None):
        """Run every phase again against the published manifest, then the gates."""
        return self._move(request, "reprovision")

    @extend_schema(request=MoveSerializer, responses={202: ActionResultSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def revalidate(self, request, pk=None):
        """Run the acceptance gates again on the installed OS, without a reimage."""
        return self._move(request, "revalidate")

    @extend_schema(request=MoveSerializer, responses={200: ActionResultSerializer})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def decommission(self, request, pk=None):
        """Take the node out of the fleet for good (fleet admin, reason required)."""
        return self._move(request, "decommission")

    @extend_schema(request=SuspectSerializer, responses={202: ActionResultSerializer, 400: REFUSED})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def suspect(self, request, pk=None):
        """Report an in-service node suspect: cordon, drain, re-check, re-admit or break/fix."""
        node = self.get_object()
        form = SuspectSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            detail = perform("suspect", node, request.user, reason=form.validated_data["reason"])
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except MoveRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return _done(node, detail, status.HTTP_202_ACCEPTED)

    @extend_schema(request=MoveSerializer, responses={200: ActionResultSerializer})
    @action(detail=True, methods=["post"], url_path="burn-in", permission_classes=[IsAuthenticated])
    def burn_in(self, request, pk=None):
        """Burn an unallocated in-service node in before handing it out (tenant platform)."""
        return self._move(request, "burn-in")
