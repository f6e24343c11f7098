"""Encryption of secrets at rest (BMC passwords) with Fernet, keyed from settings."""

from __future__ import annotations

import base64
import hashlib
from functools import cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


@cache
def _fernet(key_material: str) -> Fernet:
    if not key_material:
        # A key derived from "" is a key everyone has: refuse rather than store a readable secret.
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEY is not set")
    # The configured key is any string; Fernet wants 32 url-safe base64 bytes.
    digest = hashlib.sha256(key_material.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(plaintext: str) -> str:
    """Encrypt a secret for storage."""
    return _fernet(settings.FIELD_ENCRYPTION_KEY).encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    """Decrypt a stored secret; a wrong key is a clear error, not garbage."""
    try:
        return _fernet(settings.FIELD_ENCRYPTION_KEY).decrypt(token.encode()).decode()
    except InvalidToken:
        raise ValueError(
            "stored secret cannot be decrypted: FIELD_ENCRYPTION_KEY differs from the one "
            "it was written with"
        ) from None
