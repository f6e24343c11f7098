"""A NetBox held in memory, served over real HTTP on loopback, for the DCIM sync tests.

It follows NetBox 4.x's REST semantics for the endpoints the sync uses: paginated lists
(`count`, `next`, `results`; `limit`/`offset`) with exact-match filters (repeated parameters
OR'ed, `<fk>_id` on related ids), POST to create, PATCH to update, 400 with `{field: [msg]}`
for missing required fields, unknown related ids, unique clashes and unknown custom fields;
related objects nested as `{id, url, display, name}`, choices as `{value, label}`, `position`
as a decimal, `custom_fields` listing every field defined for the object type. Every write
lands in `changelog`, as NetBox's object-changes would.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

TOKENS = {"Token 0123456789abcdef0123456789abcdef01234567", "Bearer nbt_testkey.testsecret"}

# endpoint: (object type for custom fields, required fields, {fk field: endpoint}, choices,
#            unique-together field sets)
SPEC: dict[str, tuple[str, list[str], dict[str, str], list[str], list[tuple[str, ...]]]] = {
    "extras/custom-fields": ("", ["name", "object_types"], {}, ["type"], [("name",)]),
    "dcim/manufacturers": ("", ["name", "slug"], {}, [], [("name",), ("slug",)]),
    "dcim/device-roles": ("", ["name", "slug"], {}, [], [("name",), ("slug",)]),
    "dcim/device-types": (
        "dcim.devicetype",
        ["manufacturer", "model", "slug"],
        {"manufacturer": "dcim/manufacturers"},
        [],
        [("manufacturer", "model")],
    ),
    "dcim/sites": ("dcim.site", ["name", "slug", "status"], {}, ["status"], [("name",), ("slug",)]),
    "dcim/racks": (
        "dcim.rack",
        ["name", "site", "status"],
        {"site": "dcim/sites"},
        ["status"],
        [("site", "name")],
    ),
    # NetBox 4.x's VirtualChassis: name (64) required, domain (30), an optional master device.
    "dcim/virtual-chassis": (
        "dcim.virtualchassis",
        ["name"],
        {"master": "dcim/devices"},
        [],
        [],
    ),
    "dcim/devices": (
        "dcim.device",
        ["device_type", "role", "site", "status"],
        {
            "device_type": "dcim/device-types",
            "role": "dcim/device-roles",
            "site": "dcim/sites",
            "rack": "dcim/racks",
            "virtual_chassis": "dcim/virtual-chassis",
        },
        ["status", "face"],
        # dcim_device_unique_virtual_chassis_vc_position, as NetBox's Device.Meta declares it.
        [("site", "name"), ("virtual_chassis", "vc_position")],
    ),
    "dcim/interfaces": (
        "dcim.interface",
        ["device", "name", "type"],
        {"device": "dcim/devices"},
        ["type"],
        [("device", "name")],
    ),
    "dcim/inventory-items": (
        "dcim.inventoryitem",
        ["device", "name"],
        {"device": "dcim/devices"},
        [],
        [("device", "name")],
    ),
}
MAX_LENGTH = {"serial": 50, "part_id": 50, "name": 64, "domain": 30}


class FakeNetBox:
    """The state: objects per endpoint, the change log, failures to inject."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[int, dict]] = {endpoint: {} for endpoint in SPEC}
        self.ids = itertools.count(1)
        self.changelog: list[tuple[str, str, dict]] = []
        self.fail_serials: set[str] = set()  # writes of a device with this serial get a 400
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.url = ""

    # --- representation --------------------------------------------------------------------

    def _custom_fields_for(self, object_type: str) -> list[str]:
        return [
            cf["name"]
            for cf in self.objects["extras/custom-fields"].values()
            if object_type in cf["object_types"]
        ]

    def render(self, endpoint: str, obj: dict) -> dict:
        object_type, _, fks, choices, _ = SPEC[endpoint]
        out = {"id": obj["id"], "url": f"{self.url}/api/{endpoint}/{obj['id']}/"}
        for key, value in obj.items():
            if key in fks and value is not None:
                related = self.objects[fks[key]][value]
                label = related.get("name") or related.get("model")
                out[key] = {
                    "id": value,
                    "url": f"{self.url}/api/{fks[key]}/{value}/",
                    "display": label,
                    "name": label,
                }
            elif key in choices and value not in (None, ""):
                out[key] = {"value": value, "label": str(value).title()}
            elif key == "position" and value is not None:
                out[key] = float(value)
            elif key != "custom_fields":
                out[key] = value
        if object_type:
            data = obj.get("custom_fields", {})
            out["custom_fields"] = {n: data.get(n) for n in self._custom_fields_for(object_type)}
        out["display"] = obj.get("name") or obj.get("model") or str(obj["id"])
        return out

    # --- semantics -------------------------------------------------------------------------

    def matches(self, endpoint: str, obj: dict, filters: dict[str, list[str]]) -> bool:
        for key, wanted in filters.items():
            field = key[:-3] if key.endswith("_id") else key
            value = obj.get(field)
            if str(value) not in wanted:
                return False
        return True

    def validate(self, endpoint: str, data: dict, current: dict | None) -> dict[str, list[str]]:
        object_type, required, fks, _, uniques = SPEC[endpoint]
        merged = {**(current or {}), **data}
        errors: dict[str, list[str]] = {}
        for name in required:
            if merged.get(name) in (None, "", []):
                errors[name] = ["This field is required."]
        for name, target in fks.items():
            value = data.get(name)
            if value is not None and value not in self.objects[target]:
                errors[name] = [f"Related object not found using the provided numeric ID: {value}"]
        for name, limit in MAX_LENGTH.items():
            if isinstance(data.get(name), str) and len(data[name]) > limit:
                errors[name] = [f"Ensure this field has no more than {limit} characters."]
        if object_type and "custom_fields" in data:
            known = set(self._custom_fields_for(object_type))
            for name in data["custom_fields"]:
                if name not in known:
                    errors["custom_fields"] = [f"Unknown field name '{name}' in custom field data."]
        if endpoint == "dcim/devices" and merged.get("serial") in self.fail_serials:
            errors["serial"] = ["Injected failure for this serial."]
        if (
            endpoint == "dcim/devices"
            and merged.get("position") is not None
            and not merged.get("face")
        ):
            errors["face"] = ["Must specify rack face when defining rack position."]
        if endpoint == "dcim/devices" and merged.get("virtual_chassis") is not None:
            # NetBox's validate_device_vc_position.
            if merged.get("vc_position") is None:
                errors["vc_position"] = [
                    "A device assigned to a virtual chassis must have its position defined."
                ]
        for fields in uniques:
            if any(merged.get(f) in (None, "") for f in fields):
                continue
            for other in self.objects[endpoint].values():
                if other is current:
                    continue
                if all(other.get(f) == merged.get(f) for f in fields):
                    errors[fields[-1]] = [
                        f"{endpoint} with this {', '.join(fields)} already exists."
                    ]
        return errors

    def create(self, endpoint: str, data: dict) -> tuple[int, dict]:
        errors = self.validate(endpoint, data, None)
        if errors:
            return 400, errors
        obj = {"id": next(self.ids), **data}
        self.objects[endpoint][obj["id"]] = obj
        self.changelog.append(("create", endpoint, data))
        return 201, self.render(endpoint, obj)

    def update(self, endpoint: str, pk: int, data: dict) -> tuple[int, dict]:
        obj = self.objects[endpoint].get(pk)
        if obj is None:
            return 404, {"detail": "No object matches the given query."}
        errors = self.validate(endpoint, data, obj)
        if errors:
            return 400, errors
        for key, value in data.items():
            if key == "custom_fields":
                # NetBox merges a partial custom_fields dict into the stored data.
                obj.setdefault("custom_fields", {}).update(value)
            else:
                obj[key] = value
        self.changelog.append(("update", endpoint, data))
        return 200, self.render(endpoint, obj)

    def list(self, endpoint: str, query: dict[str, list[str]], path: str) -> tuple[int, dict]:
        limit = min(int(query.pop("limit", ["50"])[0]), 1000)
        offset = int(query.pop("offset", ["0"])[0])
        query.pop("brief", None)
        found = [o for o in self.objects[endpoint].values() if self.matches(endpoint, o, query)]
        page = found[offset : offset + limit]
        more = offset + limit < len(found)
        params = [(k, v) for k, vs in query.items() for v in vs]
        next_url = (
            f"{self.url}{path}?{urlencode(params + [('limit', limit), ('offset', offset + limit)])}"
            if more
            else None
        )
        return 200, {
            "count": len(found),
            "next": next_url,
            "previous": None,
            "results": [self.render(endpoint, o) for o in page],
        }

    def handle(self, method: str, raw_path: str, headers, body: bytes) -> tuple[int, dict]:
        if headers.get("Authorization") not in TOKENS:
            return 403, {"detail": "Invalid token"}
        parsed = urlparse(raw_path)
        parts = parsed.path.strip("/").split("/")  # api, app, model[, id]
        if len(parts) < 3 or parts[0] != "api":
            return 404, {"detail": "Not found."}
        endpoint = f"{parts[1]}/{parts[2]}"
        if endpoint not in SPEC:
            return 404, {"detail": "Not found."}
        pk = int(parts[3]) if len(parts) > 3 else None
        with self.lock:
            self.requests.append((method, raw_path))
            if method == "GET" and pk is None:
                return self.list(endpoint, parse_qs(parsed.query), parsed.path)
            if method == "GET":
                obj = self.objects[endpoint].get(pk)
                return (200, self.render(endpoint, obj)) if obj else (404, {"detail": "Not found."})
            try:
                data = json.loads(body or b"{}")
            except ValueError:
                return 400, {"detail": "JSON parse error"}
            if method == "POST" and pk is None:
                return self.create(endpoint, data)
            if method == "PATCH" and pk is not None:
                return self.update(endpoint, pk, data)
        return 405, {"detail": f'Method "{method}" not allowed.'}

    # --- helpers for tests -----------------------------------------------------------------

    def find(self, endpoint: str, **fields) -> list[dict]:
        return [
            self.render(endpoint, o)
            for o in self.objects[endpoint].values()
            if all(o.get(k) == v for k, v in fields.items())
        ]


@contextmanager
def serve_fake_netbox() -> Iterator[FakeNetBox]:
    fake = FakeNetBox()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length) if length else b""
            status, payload = fake.handle(self.command, self.path, self.headers, body)
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_PATCH = _answer  # noqa: N815

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
