"""A JSON body nested ten thousand levels deep is a 400 naming the problem on every API route."""

from __future__ import annotations

import pytest

from tests.api.conftest import client_for

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "path",
    ["/api/v1/wipe-requests/", "/api/v1/manifests/", "/api/v1/nodes/{node}/quarantine/"],
)
def test_deeply_nested_json_is_a_clear_400(alice, node, path):
    response = client_for(alice).generic(
        "POST", path.format(node=node.pk), DEEP, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {"detail": "JSON parse error - the document is nested too deeply"}
