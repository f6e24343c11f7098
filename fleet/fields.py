"""Model fields of the fleet app."""

from __future__ import annotations

from django.db import models

from .crypto import decrypt, encrypt

_PREFIX = "fernet:"


class EncryptedTextField(models.TextField):
    """A text column whose value is encrypted in the database and plain in Python."""

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return decrypt(value.removeprefix(_PREFIX))

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return _PREFIX + encrypt(value)
