"""Model fields of the fleet app."""

from __future__ import annotations

from django.db import models
from django.db.models.query_utils import DeferredAttribute

from .crypto import decrypt, encrypt

_PREFIX = "fernet:"


class Sealed:
    """A secret as the database holds it, until its attribute is read. Never the plaintext;
    its repr says nothing, so a log of a model's state shows no ciphertext either."""

    __slots__ = ("stored",)

    def __init__(self, stored: str) -> None:
        self.stored = stored

    def __repr__(self) -> str:
        return "<sealed secret>"


class _DecryptedOnRead(DeferredAttribute):
    """The attribute decrypts the stored value the first time it is read, and keeps the plain
    text on the instance from then on."""

    def __get__(self, instance, cls=None):
        value = super().__get__(instance, cls)
        if isinstance(value, Sealed):
            value = decrypt(value.stored.removeprefix(_PREFIX))
            instance.__dict__[self.field.attname] = value
        return value

    # A data descriptor (as Django's ForeignKeyDeferredAttribute): without __set__ the value in
    # the instance's __dict__ would be read past __get__, sealed.
    def __set__(self, instance, value):
        instance.__dict__[self.field.attname] = value


class EncryptedTextField(models.TextField):
    """A text column whose value is encrypted in the database and plain in Python.

    A row is decrypted only when code reads the attribute, not when the row is loaded: most
    reads of a node (every agent's poll, every page listing nodes, every export) never use its
    BMC password, and a decrypt is Fernet's HMAC and AES per row. Saving a row whose secret was
    never read writes back what was read, without encrypting it again.
    """

    descriptor_class = _DecryptedOnRead

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return Sealed(value)

    def pre_save(self, model_instance, add):
        # The instance's own value, sealed or plain: reading the attribute would decrypt it.
        if self.attname in model_instance.__dict__:
            return model_instance.__dict__[self.attname]
        return super().pre_save(model_instance, add)

    def get_prep_value(self, value):
        if isinstance(value, Sealed):
            return value.stored
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return _PREFIX + encrypt(value)
