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


class IdFilter(django_filters.NumberFilter):
    """An integer the database can hold: one past 64 bits is a 400, not an overflow (a 500).

    Found by the schema fuzzer: SQLite raises OverflowError on such a parameter.
    """

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", -(2**63))
        kwargs.setdefault("max_value", 2**63 - 1)
        super().__init__(*args, **kwargs)
