"""The answers every lab BMC handler gives: Redfish errors, JSON documents with their ETags, and
the request helpers (canonical paths, JSON bodies) that app.py and update_service.py share."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from aiohttp import web

Handler = Callable[[web.Request, re.Match[str]], Awaitable[web.StreamResponse]]


def redfish_error(status: int, message: str, message_id: str = "Base.1.8.GeneralError"):
    """A Redfish error body, as BMCs send them."""
    body = {
        "error": {
            "code": message_id,
            "message": message,
            "@Message.ExtendedInfo": [{"MessageId": message_id, "Message": message}],
        }
    }
    return web.json_response(body, status=status)


def etag_of(body: dict[str, Any]) -> str:
    """The resource's strong ETag (weakened on the way out when the client asked for gzip)."""
    return f'"{zlib.crc32(json.dumps(body, sort_keys=True).encode()):08X}"'


def document(body: dict[str, Any], status: int = 200) -> web.Response:
    """A JSON resource with its ETag header."""
    response = web.json_response(body, status=status)
    response.headers["ETag"] = etag_of(body)
    response.headers["OData-Version"] = "4.0"
    return response


def canonical(path: str) -> str:
    """A path as routes match it: unquoted, lower case, no trailing slash."""
    return unquote(path).lower().rstrip("/") or "/"


async def json_body(request: web.Request) -> dict[str, Any] | None:
    """The request's JSON object, or None when the body is not one."""
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None
