"""Serializer fields shared by the apps' APIs."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "properties": {"value": {"type": "string"}, "label": {"type": "string"}},
        "required": ["value", "label"],
    }
)
class ChoiceField(serializers.ChoiceField):
    """A choice rendered NetBox-style as `{value, label}`; written as the bare value."""

    def to_representation(self, value):
        if value in ("", None):
            return None
        value = str(value)
        return {"value": value, "label": str(self.choices.get(value, value))}


@extend_schema_field(OpenApiTypes.STR)
class DisplayField(serializers.Field):
    """The object's `str()`, as NetBox's `display`."""

    def __init__(self, **kwargs):
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value):
        return str(value)
