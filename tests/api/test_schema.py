"""The OpenAPI schema validates, its docs load nothing from a CDN, and fuzzing finds no 500."""

from __future__ import annotations

import json
import re

import pytest
import schemathesis
from django.contrib.staticfiles import finders
from django.core import signals
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from rest_framework.authtoken.models import Token

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


def test_fuzzing_every_operation_finds_no_server_error(fleet, alice, wsgi_app, settings):
    settings.ALLOWED_HOSTS = ["localhost", "testserver"]
    headers = {"Authorization": f"Token {Token.objects.create(user=alice).key}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30

    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(
            max_examples=EXAMPLES,
            derandomize=True,  # the same examples every run: deterministic in CI
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case):
            response = case.call(headers=headers)
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path} {case.query} {case.body!r}: "
                    f"{response.status_code} {response.text[:200]}"
                )

        check()
    assert not failures, json.dumps(failures[:10], indent=1)
