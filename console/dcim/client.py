"""A thin NetBox REST client over httpx: list with filters, create, patch. Nothing more.

NetBox 4.x has two token formats: v2 `nbt_<key>.<secret>`, sent as `Authorization: Bearer`,
and the legacy v1 40-hex key, sent as `Authorization: Token`. Both are accepted here.
"""

from __future__ import annotations

from typing import Any

import httpx

PAGE_LIMIT = 1000  # NetBox's default MAX_PAGE_SIZE


class NetBoxError(Exception):
    """NetBox refused or failed a request; `str()` says which object and why."""

    def __init__(self, method: str, path: str, status: int | None, detail: str):
        self.method = method
        self.path = path
        self.status = status
        self.detail = detail
        where = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"{method} {path}: {where}: {detail}")


def auth_header(token: str) -> str:
    """The Authorization header value for a v2 (nbt_...) or a v1 token."""
    token = token.strip()
    return f"Bearer {token}" if token.startswith("nbt_") else f"Token {token}"


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        parts = []
        for field, messages in body.items():
            if isinstance(messages, list):
                messages = "; ".join(str(m) for m in messages)
            parts.append(f"{field}: {messages}")
        return ", ".join(parts)
    return str(body)[:300]


class NetBoxClient:
    """NetBox's REST API at `url` (the instance's root, without /api)."""

    def __init__(self, url: str, token: str, *, timeout: float = 30.0, verify: bool = True):
        self.url = url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.url + "/api/",
            headers={
                "Authorization": auth_header(token),
                "Accept": "application/json",
                "Content-Type": "application/json",
            },
            timeout=timeout,
            verify=verify,
        )
        self.requests = 0
        self.writes = 0

    def __enter__(self) -> NetBoxClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _send(self, method: str, path: str, **kwargs) -> Any:
        self.requests += 1
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise NetBoxError(method, path, None, f"{type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise NetBoxError(method, path, response.status_code, _detail(response))
        return response.json() if response.content else None

    def list(self, endpoint: str, **filters: Any) -> list[dict]:
        """Every object of `endpoint` (e.g. "dcim/devices") matching the filters, all pages.

        A list value becomes a repeated parameter, which NetBox ORs (`?serial=A&serial=B`).
        """
        params: list[tuple[str, str]] = []
        for key, value in filters.items():
            values = value if isinstance(value, list | tuple | set) else [value]
            params.extend((key, str(v)) for v in values)
        results: list[dict] = []
        offset = 0
        while True:
            page = self._send(
                "GET",
                f"{endpoint}/",
                params=params + [("limit", str(PAGE_LIMIT)), ("offset", str(offset))],
            )
            results.extend(page["results"])
            offset += len(page["results"])
            if not page.get("next") or not page["results"]:
                return results

    def create(self, endpoint: str, data: dict) -> dict:
        self.writes += 1
        return self._send("POST", f"{endpoint}/", json=data)

    def update(self, endpoint: str, pk: int, data: dict) -> dict:
        self.writes += 1
        return self._send("PATCH", f"{endpoint}/{pk}/", json=data)
