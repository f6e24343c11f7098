"""Serializers of the fleet: sites, racks, SKUs, nodes, manifests, events. BMC credentials have no field here, by construction."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from acceptance.choices import Verdict
from common.api.fields import ChoiceField, DisplayField
from common.api.serializers import BriefSerializer, BriefUserSerializer
from fleet.choices import ComponentKind, DocumentStatus, EventKind, NodeKind, NodeState
from fleet.models import Component, Event, Manifest, Node, Rack, Site, Sku

# --- brief (nested) forms --------------------------------------------------------------------


class BriefSiteSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:site-detail")

    class Meta:
        model = Site
        fields = ["id", "url", "display", "name"]


class BriefRackSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:rack-detail")

    class Meta:
        model = Rack
        fields = ["id", "url", "display", "name"]


class BriefSkuSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:sku-detail")

    class Meta:
        model = Sku
        fields = ["id", "url", "display", "name"]


class BriefNodeSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:node-detail")

    class Meta:
        model = Node
        fields = ["id", "url", "display", "serial"]


class BriefManifestSerializer(BriefSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:manifest-detail")

    class Meta:
        model = Manifest
        fields = ["id", "url", "version"]


# --- full forms ------------------------------------------------------------------------------


class SiteSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:site-detail")
    display = DisplayField()

    class Meta:
        model = Site
        fields = ["id", "url", "display", "name", "description"]


class RackSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:rack-detail")
    display = DisplayField()
    site = BriefSiteSerializer()

    class Meta:
        model = Rack
        fields = ["id", "url", "display", "site", "name", "height_u"]
        validators = []  # the model's named constraint is checked in validate()

    def validate(self, attrs):
        site = attrs.get("site", getattr(self.instance, "site", None))
        name = attrs.get("name", getattr(self.instance, "name", None))
        clash = Rack.objects.filter(site=site, name=name)
        if self.instance is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            raise serializers.ValidationError({"name": f"{site} already has a rack {name!r}."})
        return attrs


class SkuSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:sku-detail")
    display = DisplayField()

    class Meta:
        model = Sku
        fields = [
            "id",
            "url",
            "display",
            "name",
            "description",
            "gpu_count",
            "gpu_model",
            "nic_count",
            "nic_line_rate_gbps",
            "dpu_count",
            "drive_count",
            "nvlink_bandwidth_gbps",
        ]


class ComponentSerializer(serializers.ModelSerializer):
    kind = ChoiceField(choices=ComponentKind.choices, read_only=True)

    class Meta:
        model = Component
        fields = [
            "kind",
            "slot",
            "model",
            "serial",
            "part_number",
            "firmware_version",
            "updateable",
            "observed_at",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Component) -> dict:
        # A page of 1000 nodes has 30,000 components: the generic per-field machinery would
        # dominate its time, so the (read-only) shape is written out here.
        kind = instance.kind
        return {
            "kind": {"value": kind, "label": _KIND_LABELS.get(kind, kind)},
            "slot": instance.slot,
            "model": instance.model,
            "serial": instance.serial,
            "part_number": instance.part_number,
            "firmware_version": instance.firmware_version,
            "updateable": instance.updateable,
            "observed_at": self.fields["observed_at"].to_representation(instance.observed_at),
        }


_KIND_LABELS = dict(ComponentKind.choices)


class NodeSerializer(serializers.ModelSerializer):
    """A node as DCIM sees it: where, what, its state and verdict, and its parts.

    Read-only: enrollment (with BMC credentials) is the admin's and CSV import's job, and the
    state moves only through lifecycle actions.
    """

    url = serializers.HyperlinkedIdentityField(view_name="api:node-detail")
    display = DisplayField()
    sku = BriefSkuSerializer(read_only=True)
    site = BriefSiteSerializer(source="rack.site", read_only=True, allow_null=True)
    rack = BriefRackSerializer(read_only=True, allow_null=True)
    state = ChoiceField(choices=NodeState.choices, read_only=True)
    # A server, or a rack-scale member (compute tray, NVLink switch tray, power shelf) and its
    # number among its kind; the rack's view of them is /rack-systems/.
    kind = ChoiceField(choices=NodeKind.choices, read_only=True)
    manifest = BriefManifestSerializer(read_only=True, allow_null=True)
    last_verdict = ChoiceField(
        choices=Verdict.choices,
        read_only=True,
        allow_null=True,
        help_text="Worst gate verdict of the node's latest run with gate results",
    )
    components = ComponentSerializer(many=True, read_only=True)

    class Meta:
        model = Node
        # Deliberately no bmc_username or bmc_password: credentials never leave the server.
        fields = [
            "id",
            "url",
            "display",
            "serial",
            "hostname",
            "sku",
            "site",
            "rack",
            "position",
            "kind",
            "member_index",
            "bmc_address",
            "bmc_cert_fingerprint",
            "mac_addresses",
            "state",
            "state_changed_at",
            "manifest",
            "last_verdict",
            "tenant",
            "allocation_ref",
            "allocated_at",
            "attention",
            "bios_attributes",
            "components",
            "created_at",
        ]
        read_only_fields = fields


class DocumentSerializer(serializers.ModelSerializer):
    """A versioned YAML document: write `yaml_text`; SKU, version and spec come from it.

    A published or retired version is immutable: the model's clean() refuses a change.
    """

    display = DisplayField()
    sku = BriefSkuSerializer(read_only=True)
    status = ChoiceField(choices=DocumentStatus.choices, read_only=True)
    created_by = BriefUserSerializer(read_only=True, allow_null=True)

    class Meta:
        fields = [
            "id",
            "url",
            "display",
            "sku",
            "version",
            "status",
            "yaml_text",
            "spec",
            "created_at",
            "created_by",
            "published_at",
        ]
        read_only_fields = ["version", "spec", "created_at", "published_at"]

    def validate(self, attrs):
        document = self.instance or self.Meta.model()
        document.yaml_text = attrs.get("yaml_text", document.yaml_text)
        try:
            # sku, version and spec are derived from the YAML by clean(); check them there.
            document.full_clean(exclude={"sku", "version", "spec", "created_by"})
        except DjangoValidationError as exc:
            raise serializers.ValidationError(serializers.as_serializer_error(exc)) from None
        attrs.update(sku=document.sku, version=document.version, spec=document.spec)
        return attrs


class ManifestSerializer(DocumentSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:manifest-detail")

    class Meta(DocumentSerializer.Meta):
        model = Manifest


class EventSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:event-detail")
    node = BriefNodeSerializer(read_only=True, allow_null=True)
    rack = BriefRackSerializer(read_only=True, allow_null=True)
    kind = ChoiceField(choices=EventKind.choices, read_only=True)
    actor = serializers.CharField(source="author", read_only=True)

    class Meta:
        model = Event
        fields = ["id", "url", "node", "rack", "kind", "actor", "message", "data", "created_at"]
        read_only_fields = fields
