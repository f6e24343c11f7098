"""Serializers of rack-scale systems (GB200/GB300 NVL72) and their NVLink domains: the rack's
lifecycle state, its members (kind, slot, position, height, node, state) and the domain's
fabric status, which reads "unknown" where nothing was observed (acceptance.rack_status)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from acceptance.rack_status import FabricStatus, FabricWord, fabric_status, fabric_statuses
from common.api.fields import ChoiceField, DisplayField
from common.api.serializers import BriefSerializer
from fleet.choices import NodeKind, NodeState, RackState
from fleet.models import NvlinkDomain, RackSystem

from .serializers import (
    BriefNodeSerializer,
    BriefRackSerializer,
    BriefSiteSerializer,
    BriefSkuSerializer,
)


class BriefNvlinkDomainSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:nvlinkdomain-detail")

    class Meta:
        model = NvlinkDomain
        fields = ["id", "url", "display", "name"]


class BriefRackSystemSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:racksystem-detail")
    rack = BriefRackSerializer(read_only=True)
    state = ChoiceField(choices=RackState.choices, read_only=True)

    class Meta:
        model = RackSystem
        fields = ["id", "url", "display", "rack", "state"]


class MemberSerializer(serializers.Serializer):
    """One member of the rack: what it is, where it sits, which node it is and where it stands."""

    kind = ChoiceField(choices=NodeKind.choices, read_only=True)
    slot = serializers.IntegerField(
        source="member_index",
        read_only=True,
        allow_null=True,
        help_text="Its number among its kind",
    )
    position = serializers.IntegerField(read_only=True, allow_null=True, help_text="Lowest U")
    height_u = serializers.SerializerMethodField()
    node = BriefNodeSerializer(source="*", read_only=True)
    state = ChoiceField(choices=NodeState.choices, read_only=True)

    def get_height_u(self, node) -> int:
        return self.context.get("heights", {}).get((node.rack_id, node.kind), 1)


class FabricSerializer(serializers.Serializer):
    """The NVLink domain's fabric status as the rack's latest rack run observed it."""

    verdict = ChoiceField(choices=FabricWord.choices, source="word", read_only=True)
    summary = serializers.CharField(read_only=True)
    rack_run = serializers.IntegerField(source="rack_run_id", read_only=True, allow_null=True)
    observed_at = serializers.DateTimeField(read_only=True, allow_null=True)
    findings = serializers.ListField(child=serializers.CharField(), read_only=True)


class RackSystemListSerializer(serializers.ListSerializer):
    """A page of systems: their fabric statuses and member heights read once for the page."""

    def to_representation(self, data):
        systems = list(data.all() if hasattr(data, "all") else data)
        self.child.context["fabric"] = fabric_statuses(systems)
        return super().to_representation(systems)


class RackSystemSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:racksystem-detail")
    display = DisplayField()
    rack = BriefRackSerializer(read_only=True)
    site = BriefSiteSerializer(source="rack.site", read_only=True)
    sku = BriefSkuSerializer(read_only=True)
    domain = BriefNvlinkDomainSerializer(read_only=True, allow_null=True)
    state = ChoiceField(choices=RackState.choices, read_only=True)
    fabric = serializers.SerializerMethodField()
    members = serializers.SerializerMethodField()

    class Meta:
        model = RackSystem
        list_serializer_class = RackSystemListSerializer
        fields = [
            "id",
            "url",
            "display",
            "rack",
            "site",
            "sku",
            "domain",
            "state",
            "state_changed_at",
            "attention",
            "fabric",
            "members",
        ]
        read_only_fields = fields

    @extend_schema_field(FabricSerializer)
    def get_fabric(self, system: RackSystem) -> dict:
        known: dict[int, FabricStatus] = self.context.get("fabric", {})
        status = known.get(system.pk) or fabric_status(system)
        return FabricSerializer(status).data

    @extend_schema_field(MemberSerializer(many=True))
    def get_members(self, system: RackSystem) -> list[dict]:
        # Prefetched by the view (the rack's member_list, the SKU's declared members): no
        # query per rack on a page.
        heights = {(system.rack_id, m.kind): m.height_u for m in system.sku.members.all()}
        nodes = getattr(system.rack, "member_list", None)
        if nodes is None:
            nodes = list(system.members())
        context = {**self.context, "heights": heights}
        return MemberSerializer(nodes, many=True, context=context).data


class NvlinkDomainSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:nvlinkdomain-detail")
    display = DisplayField()
    systems = BriefRackSystemSerializer(many=True, read_only=True)

    class Meta:
        model = NvlinkDomain
        fields = ["id", "url", "display", "name", "description", "systems", "created_at"]
        read_only_fields = fields
