"""Serializers of acceptance profiles, gate results and decisions."""

from __future__ import annotations

from rest_framework import serializers

from acceptance.choices import DecisionKind, Verdict
from acceptance.gates import gate_choices
from acceptance.models import AcceptanceProfile, Decision, GateResult
from common.api.fields import ChoiceField, DisplayField
from common.api.serializers import BriefUserSerializer
from provisioning.agents.redaction import redactor_for

from .run_serializers import BriefRunSerializer
from .serializers import BriefNodeSerializer, DocumentSerializer


class AcceptanceProfileSerializer(DocumentSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:acceptanceprofile-detail")

    class Meta(DocumentSerializer.Meta):
        model = AcceptanceProfile


class GateResultSerializer(serializers.ModelSerializer):
    """One gate on one node in one run. The tools' raw output is on the detail view only."""

    url = serializers.HyperlinkedIdentityField(view_name="api:gateresult-detail")
    display = DisplayField()
    # Null for a person's upload of a manual tool run (it belongs to no run).
    run = BriefRunSerializer(read_only=True, allow_null=True)
    node = BriefNodeSerializer(read_only=True)
    gate = ChoiceField(choices=gate_choices(), read_only=True)
    verdict = ChoiceField(choices=Verdict.choices, read_only=True)

    class Meta:
        model = GateResult
        fields = [
            "id",
            "url",
            "display",
            "run",
            "node",
            "gate",
            "verdict",
            "metrics",
            "thresholds",
            "findings",
            "tool_versions",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class GateResultDetailSerializer(GateResultSerializer):
    # The tools' output comes from the node: a node's secrets in it never leave (redaction.py).
    raw_output = serializers.SerializerMethodField()

    class Meta(GateResultSerializer.Meta):
        fields = GateResultSerializer.Meta.fields + ["raw_output"]
        read_only_fields = fields

    def get_raw_output(self, result: GateResult) -> dict:
        return redactor_for(result.node).tree(result.raw_output)


class DecisionSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:decision-detail")
    node = BriefNodeSerializer(read_only=True)
    run = BriefRunSerializer(read_only=True, allow_null=True)
    kind = ChoiceField(choices=DecisionKind.choices, read_only=True)
    actor = BriefUserSerializer(read_only=True)

    class Meta:
        model = Decision
        fields = ["id", "url", "node", "run", "kind", "actor", "reason", "override", "created_at"]
        read_only_fields = fields
