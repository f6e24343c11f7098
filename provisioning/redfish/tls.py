"""BMC certificate pinning: read a BMC's fingerprint at enrollment, check it on every connection.

BMCs ship self-signed certificates no CA vouches for. Instead of switching verification off, the
certificate's SHA-256 is pinned when the node is enrolled and every TLS connection is refused
unless the presented certificate hashes to the pinned value, before any credential is sent.
"""

from __future__ import annotations

import functools
import hashlib
import socket
import ssl
from urllib.parse import urlsplit

import httpx

from .errors import BmcUnreachable


class PinMismatch(ssl.SSLCertVerificationError):
    """Raised inside the TLS handshake when the presented certificate is not the pinned one."""

    def __init__(self, expected: str, presented: str) -> None:
        self.expected = expected
        self.presented = presented
        super().__init__(f"certificate fingerprint {presented} is not the pinned {expected}")


def format_fingerprint(der: bytes) -> str:
    """SHA-256 of a DER certificate as upper-case hex pairs joined by colons (openssl style)."""
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def normalize_fingerprint(value: str) -> str:
    """Canonical form of a fingerprint typed by a person (any case, with or without colons)."""
    raw = value.replace(":", "").replace(" ", "").strip().upper()
    if len(raw) != 64 or any(c not in "0123456789ABCDEF" for c in raw):
        raise ValueError(f"not a SHA-256 fingerprint: {value!r}")
    return ":".join(raw[i : i + 2] for i in range(0, 64, 2))


def host_port(url: str) -> tuple[str, int]:
    """The TLS endpoint of a BMC URL."""
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


def fetch_fingerprint(url: str, *, timeout: float = 10.0) -> str:
    """Connect to the BMC and return the fingerprint of the certificate it presents.

    Used at enrollment (trust on first use, by an operator's explicit act) and by
    `redfish_probe --insecure`. Nothing is sent over the connection.
    """
    host, port = host_port(url)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # Not verifying here is the point: this reads the certificate so a person can pin it.
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            with context.wrap_socket(sock, server_hostname=host) as tls:
                der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as exc:
        raise BmcUnreachable(url, f"cannot read the TLS certificate: {exc}") from None
    if not der:
        raise BmcUnreachable(url, "the BMC presented no certificate")
    return format_fingerprint(der)


class PinnedContext(ssl.SSLContext):
    """An SSL context that accepts exactly one certificate, identified by its fingerprint.

    Chain and hostname checks are replaced by the pin (a BMC's self-signed certificate has no
    chain); the comparison runs right after the handshake, before a request is written.
    """

    pinned: str = ""

    def wrap_socket(self, *args, **kwargs):  # type: ignore[override]
        tls = super().wrap_socket(*args, **kwargs)
        presented = format_fingerprint(tls.getpeercert(binary_form=True) or b"")
        if presented != self.pinned:
            tls.close()
            raise PinMismatch(self.pinned, presented)
        return tls


@functools.lru_cache(maxsize=4096)
def pinned_context(fingerprint: str) -> ssl.SSLContext:
    """An SSL context that only talks to the certificate with this fingerprint (shared: cached)."""
    context = PinnedContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    # The pin is the verification: see PinnedContext.wrap_socket.
    context.verify_mode = ssl.CERT_NONE
    context.pinned = normalize_fingerprint(fingerprint)
    return context


@functools.lru_cache(maxsize=1)
def default_context() -> ssl.SSLContext:
    """Ordinary CA verification, built once: loading the CA bundle costs more than a request."""
    return httpx.create_ssl_context()


def find_pin_mismatch(exc: BaseException) -> PinMismatch | None:
    """The PinMismatch buried in an httpx/httpcore exception chain, if that is what failed."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, PinMismatch):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
