"""The OpenAPI schema validates, its docs load nothing from a CDN, and fuzzing finds no 500."""

from __future__ import annotations

import re

import pytest
import schemathesis
from django.contrib.staticfiles import finders
from django.core import signals
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.urls import resolve
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import (
    FailureGroup,
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
)

# Examples per operation: about 40 operations, so a few hundred requests in all.
EXAMPLES = 12


def test_schema_validates(db, tmp_path):
    out = tmp_path / "schema.yaml"
    # --fail-on-warn: an endpoint drf-spectacular cannot describe fails the build.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    assert "/api/v1/nodes/" in out.read_text()


def test_schema_is_served_and_lists_every_route(client):
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in (
        "/api/v1/sites/",
        "/api/v1/racks/",
        "/api/v1/skus/",
        "/api/v1/nodes/",
        "/api/v1/nodes/export.csv",
        "/api/v1/manifests/{id}/publish/",
        "/api/v1/acceptance-profiles/",
        "/api/v1/runs/",
        "/api/v1/gate-results/",
        "/api/v1/decisions/",
        "/api/v1/wipe-requests/",
        "/api/v1/wipe-certificates/",
        "/api/v1/events/",
    ):
        assert path in schema["paths"], path
    node = schema["components"]["schemas"]["Node"]["properties"]
    assert "bmc_address" in node and "bmc_password" not in node and "bmc_username" not in node
    assert "state" in node and node["state"].get("readOnly", True)


def test_docs_load_nothing_from_a_cdn(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "external asset in docs"
    assets = re.findall(r"""(?:src|href)="/static/([^"]+)\"""", page)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    for asset in assets:
        assert finders.find(asset), f"{asset} is not a vendored static file"


@pytest.fixture
def wsgi_app():
    """The real WSGI app, inside the test's transaction.

    Django closes "old" connections at each request's start and end; inside a test transaction
    that would close the connection holding it, so (as Django's own test client does) those
    receivers are detached while the fuzzer runs.
    """
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


# What the fuzzing holds every response to: no server error, and a body and content type that
# match the schema for the status code answered. (Undocumented 4xx codes and lax input checks
# are other checks, not schema violations.)
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


def existing_ids(paths) -> dict[str, int]:
    """The first object's id of every collection among the schema's paths, by the path."""
    ids = {}
    for path in paths:
        if path.endswith("/") and "{" not in path:
            view = getattr(resolve(path).func, "cls", None)
            queryset = getattr(view, "queryset", None)
            first = (
                queryset.order_by("pk").values_list("pk", flat=True).first() if queryset else None
            )
            if first is not None:
                ids[path] = first
    return ids


def test_fuzzing_every_operation_finds_no_server_error_and_no_schema_violation(
    fleet, alice, wsgi_app, settings
):
    settings.ALLOWED_HOSTS = ["localhost", "testserver"]
    token = Token.objects.create(user=alice).key
    headers = {"Authorization": f"Token {token}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    ids = existing_ids(schema.raw_schema["paths"])
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30

    for operation in operations:

        @given(case=operation.as_strategy(), on_a_real_object=st.booleans())
        @hypothesis_settings(
            max_examples=EXAMPLES,
            derandomize=True,  # the same examples every run: deterministic in CI
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case, on_a_real_object):
            # Random ids find nothing (404): half the examples aim at an object that exists, so
            # the answers that carry a body are checked against the schema too.
            real_id = ids.get(case.operation.path.split("{id}")[0])
            if on_a_real_object and real_id is not None and "id" in (case.path_parameters or {}):
                case.path_parameters["id"] = real_id
            response = case.call(headers=headers)
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except FailureGroup as exc:
                found = "; ".join(f"{f.title}: {f.message.splitlines()[0]}" for f in exc.exceptions)
                failures.append(
                    f"{case.method} {case.operation.path} -> {response.status_code}: {found}"
                )

        check()
    distinct = sorted(set(failures))
    assert not distinct, "\n".join(distinct[:30]) + f"\n({len(failures)} failing requests)"
