"""Filter classes shared by the apps' FilterSets."""

from __future__ import annotations

from datetime import UTC

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField


class UTCIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 instant, converted to UTC before it reaches the database.

    Python accepts offsets up to ±23:59 but PostgreSQL only ±15:59, and a year-1 date with a
    positive offset is before year 1 in UTC: both become a 400 here instead of a 500 there.
    """

    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None or parsed.tzinfo is None:
            return parsed
        try:
            return parsed.astimezone(UTC)
        except (OverflowError, ValueError):
            raise forms.ValidationError("Instant out of range.", code="invalid") from None


class DateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UTCIsoDateTimeField
