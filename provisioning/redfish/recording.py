"""A dry-run Transport: reads go to the BMC, writes are written down instead of sent.

`redfish_act --dry-run` and the capture tests use it to see the exact requests a write would
send. GET and HEAD, and the session's own login and logout, reach the BMC (the writer needs what
it reads to choose its request); every other request is recorded, with no credential in it, and
answered as a BMC's plain success is: 204, no body.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from .firmware_update import image_size
from .transport import Transport

SECRET = "***"
# Request headers that carry a credential: never written down.
SECRET_HEADERS = frozenset({"authorization", "x-auth-token", "cookie", "proxy-authorization"})
READS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class RecordedRequest:
    """One write a dry run would have sent: its method, path, headers and body, secrets masked.

    `headers` are those the writer set (If-Match...) and the body's Content-Type; the transport's
    standing Accept headers and every credential are left out.
    A multipart body is recorded part by part: a JSON part (UpdateParameters) as its object, a
    file as its name and size, never its bytes.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class RecordingTransport(Transport):
    """A Transport that sends reads and the session login/logout, and records every other request."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.recorded: list[RecordedRequest] = []

    def _send(self, method, url, json, files, data, headers, auth, timeout=None) -> httpx.Response:
        if method in READS or not auth or self._is_logout(method, url):
            return super()._send(method, url, json, files, data, headers, auth, timeout)
        self.recorded.append(self._record(method, url, json, files, data, headers))
        return httpx.Response(204, request=httpx.Request(method, url))

    def _is_logout(self, method: str, url: str) -> bool:
        return method == "DELETE" and url == self.session_uri

    def _record(self, method, url, json_body, files, data, headers) -> RecordedRequest:
        parts = urlsplit(url)
        sent = dict(headers or {})
        if files:
            sent["Content-Type"] = "multipart/form-data"
            body: Any = self._mask(_multipart(files, data))
        elif json_body is not None:
            sent["Content-Type"] = "application/json"
            body = self._mask(json_body)
        else:
            body = self._mask(data)
        kept = {k: self._mask(v) for k, v in sent.items() if k.lower() not in SECRET_HEADERS}
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return RecordedRequest(method=method, path=path, headers=kept, body=body)

    def _mask(self, value: Any) -> Any:
        """The value with every password field and every copy of the BMC password masked."""
        if isinstance(value, dict):
            return {
                key: SECRET if _is_secret_field(key, item) else self._mask(item)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._mask(item) for item in value]
        if isinstance(value, str):
            return self._scrub(value)
        return value


def _is_secret_field(key: Any, value: Any) -> bool:
    # Virtual-media and SimpleUpdate credentials travel as "Password" (DMTF VirtualMedia 1.3,
    # UpdateService 1.4); a null or empty one carries nothing to hide.
    return isinstance(key, str) and "password" in key.lower() and value not in (None, "")


def _multipart(files: Any, data: Any) -> dict[str, Any]:
    """Each part of a multipart body as something printable: JSON parsed, files by name and size."""
    items = files.items() if isinstance(files, dict) else files
    out: dict[str, Any] = dict(data or {})
    for name, value in items:
        filename, content = (value[0], value[1]) if isinstance(value, tuple) else (None, value)
        if filename is None:
            out[name] = _json_or_text(content)
        else:
            out[name] = {"filename": filename, "size": image_size(content)}
    return out


def _json_or_text(content: Any) -> Any:
    text = content.decode(errors="replace") if isinstance(content, bytes) else str(content)
    try:
        return json.loads(text)
    except ValueError:
        return text
