"""Base serializers shared by the apps' APIs."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ObjectDoesNotExist
from rest_framework import serializers

from .fields import DisplayField


class BriefSerializer(serializers.ModelSerializer):
    """A related object in brief (id, url, display, a name), as NetBox nests relations.

    Written, it accepts the related object's id (or `{"id": ...}`), so the same field reads
    nested and writes flat.
    """

    display = DisplayField()

    def to_internal_value(self, data):
        pk = data.get("id") if isinstance(data, dict) else data
        if isinstance(pk, bool) or not isinstance(pk, int | str) or not str(pk).isdigit():
            raise serializers.ValidationError("Expected the related object's id.")
        try:
            return self.Meta.model.objects.get(pk=int(pk))
        except (ObjectDoesNotExist, OverflowError):
            raise serializers.ValidationError(f"No object with id {pk}.") from None
        except ValueError:
            raise serializers.ValidationError("Expected the related object's id.") from None


class BriefUserSerializer(serializers.ModelSerializer):
    """A user in brief: who acted."""

    class Meta:
        model = get_user_model()
        fields = ["id", "username"]
        read_only_fields = fields
