"""Acceptance: profiles per SKU (versioned like manifests)."""

from __future__ import annotations

from django.db import models

from fleet.choices import DocumentStatus
from fleet.models import Sku, VersionedDocument

from .profiles import parse_profile


class AcceptanceProfile(VersionedDocument):
    """The ordered gates a node of one SKU must pass, with each gate's thresholds."""

    sku = models.ForeignKey(Sku, on_delete=models.PROTECT, related_name="acceptance_profiles")

    parse_yaml = staticmethod(parse_profile)

    class Meta:
        ordering = ["sku__name", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["sku", "version"], name="profile_unique_version"),
            models.UniqueConstraint(
                fields=["sku"],
                condition=models.Q(status=DocumentStatus.PUBLISHED),
                name="profile_one_published_per_sku",
            ),
        ]

    @classmethod
    def current_for(cls, sku: Sku) -> AcceptanceProfile | None:
        """The published profile of a SKU."""
        return cls.objects.filter(sku=sku, status=DocumentStatus.PUBLISHED).first()
