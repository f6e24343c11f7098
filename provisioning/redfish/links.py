"""Where a Redfish resource is and which version of it a write names: @odata.id links, a node's
system address on a BMC that serves several, the $expand query a service root offers, and ETags
(a weak one is sent back strong where a BMC insists)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from . import errors


def odata_id(resource: dict[str, Any], url: str) -> str:
    """The @odata.id of a resource or link object; its absence is a typed error."""
    value = resource.get("@odata.id") if isinstance(resource, dict) else None
    if not value or not isinstance(value, str):
        raise errors.MissingOdataId(url, "a resource or link lacks its @odata.id")
    return value


def system_in_address(base_url: str) -> str | None:
    """The system id a BMC address names in its path (/redfish/v1/Systems/<id>), or None."""
    found = re.match(r"^/redfish/v1/Systems/([^/?#]+)/?$", urlsplit(base_url).path, re.IGNORECASE)
    return unquote(found.group(1)) if found else None


def system_address(base_url: str, system_id: str) -> str:
    """The address of one node on a BMC that serves several: the BMC's, naming its system."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}/redfish/v1/Systems/{quote(system_id)}"


def expand_query(root: dict[str, Any]) -> str | None:
    """The $expand query for one level of a collection's members, if the service root offers it."""
    offered = (root.get("ProtocolFeaturesSupported") or {}).get("ExpandQuery") or {}
    levels = "($levels=1)" if offered.get("Levels") else ""
    if offered.get("NoLinks"):
        return f"$expand=.{levels}"
    if offered.get("ExpandAll"):
        return f"$expand=*{levels}"
    return None


def is_weak_etag(etag: str) -> bool:
    """Whether an ETag is weak (W/"...")."""
    return etag.strip().startswith(("W/", "w/"))


def strong_etag(etag: str | None) -> str | None:
    """The strong form of an ETag (W/"x" -> "x"); None stays None."""
    if not etag:
        return None
    value = etag.strip()
    return value[2:] if is_weak_etag(value) else value
