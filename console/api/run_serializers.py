"""Serializers of runs, phases, wipe requests and certificates: runs and certificates are read-only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from common.api.fields import ChoiceField, DisplayField
from common.api.serializers import BriefSerializer, BriefUserSerializer
from fleet.models import Node
from provisioning.choices import (
    ERASE_PURPOSE,
    ERASE_STANDARD,
    CertificateResult,
    PhaseStatus,
    RunKind,
    RunStatus,
    WipeStatus,
)
from provisioning.day2.wipes.certificates import CERTIFICATE_SCOPE
from provisioning.models import PhaseRecord, Run, WipeCertificate, WipeRequest

from .serializers import BriefManifestSerializer, BriefNodeSerializer


class BriefRunSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:run-detail")

    class Meta:
        model = Run
        fields = ["id", "url", "display"]


class PhaseRecordSerializer(serializers.ModelSerializer):
    status = ChoiceField(choices=PhaseStatus.choices, read_only=True)
    duration_s = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = PhaseRecord
        fields = [
            "id",
            "phase",
            "order",
            "status",
            "attempts",
            "started_at",
            "finished_at",
            "duration_s",
            "deadline_at",
            "wait_reason",
            "changes",
            "error",
            "log",
        ]
        read_only_fields = fields


class RunSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:run-detail")
    display = DisplayField()
    node = BriefNodeSerializer(read_only=True)
    manifest = BriefManifestSerializer(read_only=True)
    kind = ChoiceField(choices=RunKind.choices, read_only=True)
    status = ChoiceField(choices=RunStatus.choices, read_only=True)
    started_by = BriefUserSerializer(read_only=True, allow_null=True)
    phases = PhaseRecordSerializer(many=True, read_only=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "url",
            "display",
            "node",
            "kind",
            "status",
            "manifest",
            "current_phase",
            "next_look_at",
            "wait_reason",
            "last_error",
            "transient_budget",
            "transient_used",
            "failure_budget",
            "failure_used",
            "started_by",
            "created_at",
            "started_at",
            "finished_at",
            "phases",
        ]
        read_only_fields = fields


class BriefWipeRequestSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:wiperequest-detail")

    class Meta:
        model = WipeRequest
        fields = ["id", "url", "display"]


class WipeCertificateSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:wipecertificate-detail")
    wipe_request = BriefWipeRequestSerializer(read_only=True)
    node = BriefNodeSerializer(read_only=True)
    run = BriefRunSerializer(read_only=True, allow_null=True)
    result = ChoiceField(choices=CertificateResult.choices, read_only=True)
    standard = serializers.SerializerMethodField()
    # The certificate covers the erase alone: whether the node came back is on its request.
    scope = serializers.SerializerMethodField()
    tenant = serializers.CharField(source="wipe_request.tenant", read_only=True)
    allocation_ref = serializers.CharField(source="wipe_request.allocation_ref", read_only=True)

    class Meta:
        model = WipeCertificate
        fields = [
            "id",
            "url",
            "wipe_request",
            "node",
            "tenant",
            "allocation_ref",
            "run",
            "result",
            "standard",
            "scope",
            "drives",
            "requested_by",
            "approved_by",
            "started_at",
            "finished_at",
            "created_at",
        ]
        read_only_fields = fields

    def get_standard(self, obj: WipeCertificate) -> str:
        return f"{ERASE_STANDARD}: {ERASE_PURPOSE}"

    def get_scope(self, obj: WipeCertificate) -> str:
        return CERTIFICATE_SCOPE.format(wipe=obj.wipe_request_id)


class WipeRequestSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:wiperequest-detail")
    display = DisplayField()
    nodes = BriefNodeSerializer(many=True, read_only=True)
    status = ChoiceField(choices=WipeStatus.choices, read_only=True)
    # Set when status is "failed": the node that did not come back; failure_reason says why.
    failed_node = BriefNodeSerializer(read_only=True, allow_null=True)
    requested_by = BriefUserSerializer(read_only=True, allow_null=True)
    certificates = serializers.HyperlinkedRelatedField(
        many=True, read_only=True, view_name="api:wipecertificate-detail"
    )

    class Meta:
        model = WipeRequest
        fields = [
            "id",
            "url",
            "display",
            "tenant",
            "allocation_ref",
            "nodes",
            "status",
            "failed_node",
            "failure_reason",
            "requested_by",
            "created_at",
            "certificates",
        ]
        read_only_fields = fields


@dataclass(frozen=True)
class NodeRef:
    """A node as the caller named it: `lookup` finds it (None: nothing can match), `label` says it."""

    lookup: dict[str, Any] | None
    label: str


# Ids are 64-bit keys: a larger number names no node (and must not reach the database).
MAX_NODE_ID = 2**63 - 1


@extend_schema_field(
    {"oneOf": [{"type": "integer"}, {"type": "string"}], "description": "node id or serial"}
)
class NodeRefField(serializers.Field):
    """A node named by its id (a JSON number, or {"id": n}) or by its serial (a string).

    Only parsed here: WipeRequestCreateSerializer looks it up among the nodes the caller may name.
    """

    def to_internal_value(self, data) -> NodeRef:
        if isinstance(data, dict):
            data = data.get("id", data.get("serial"))
        if isinstance(data, bool) or not isinstance(data, int | str) or data == "":
            raise serializers.ValidationError("Expected a node id (number) or serial (string).")
        if isinstance(data, int):
            return NodeRef({"pk": data} if 0 < data <= MAX_NODE_ID else None, str(data))
        return NodeRef({"serial": data.strip()}, data.strip())

    def to_representation(self, value):
        return value.pk


class WipeRequestCreateSerializer(serializers.Serializer):
    """What a tenant release names: the tenant, its allocation, and the nodes it gives back."""

    tenant = serializers.CharField(max_length=100)
    allocation_ref = serializers.CharField(max_length=100)
    nodes = serializers.ListField(child=NodeRefField(), allow_empty=False, max_length=10000)

    def validate(self, attrs: dict) -> dict:
        request = self.context.get("request")
        candidates = Node.objects.all()
        if request is None or not request.user.has_perm("fleet.view_node"):
            # A caller who may not see the fleet (the tenant platform) names only the tenant's own
            # nodes: another's is "No node", the same as one that does not exist, so no serial,
            # state or tenancy of it leaks, and walking the ids learns nothing.
            candidates = candidates.filter(tenant=attrs["tenant"].strip())
        nodes, errors = [], {}
        for index, ref in enumerate(attrs["nodes"]):
            node = candidates.filter(**ref.lookup).first() if ref.lookup else None
            if node is None:
                errors[index] = [f"No node {ref.label}."]
            else:
                nodes.append(node)
        if errors:
            raise serializers.ValidationError({"nodes": errors})
        return {**attrs, "nodes": nodes}
