"""The WebSocket origin check: the page that opens a socket must be this site, by scheme, host and
port, as a browser's same-origin rule reads it.

Channels' AllowedHostsOriginValidator compares the Origin's host with ALLOWED_HOSTS only: a page
on http://greenlight:8080 (another service, same host) or on plain HTTP next to an HTTPS site
could open a signed-in user's socket. Here the Origin must equal the site the socket was opened
on (its Host header, the scheme the request came in by), or be one of CSRF_TRUSTED_ORIGINS.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


def _headers(scope: dict) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in scope.get("headers", [])}


def site_scheme(scope: dict) -> str:
    """The scheme of the page that may open this socket: https when the request came in secure."""
    if scope.get("scheme") == "wss":
        return "https"
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name, secure_value = proxy_header
        wire_name = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin1")
        if _headers(scope).get(wire_name, b"").decode("latin1") == secure_value:
            return "https"
    return "http"


def _origin(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    return scheme, host.lower().strip("[]"), port or DEFAULT_PORTS.get(scheme, 0)


def allowed_origin(scope: dict) -> bool:
    """True if the socket's Origin header is this site or a trusted origin."""
    headers = _headers(scope)
    try:
        origin = urlsplit(headers[b"origin"].decode("latin1"))
        origin_key = _origin(origin.scheme, origin.hostname or "", origin.port)
    except (KeyError, UnicodeDecodeError, ValueError):  # absent, undecodable, a bad port
        return False
    trusted = set()
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        parsed = urlsplit(entry)
        try:
            trusted.add(_origin(parsed.scheme, parsed.hostname or "", parsed.port))
        except ValueError:
            continue
    if origin_key in trusted:
        return True
    host, port = split_domain_port(headers.get(b"host", b"").decode("latin1"))
    if not host or not validate_host(host, settings.ALLOWED_HOSTS):
        return False
    return origin_key == _origin(site_scheme(scope), host, int(port) if port else None)


class SameOriginValidator:
    """ASGI middleware: refuse a WebSocket whose Origin is not this site (see the module)."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not allowed_origin(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
