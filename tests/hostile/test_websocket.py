"""The live WebSocket under hostile use: foreign origins by scheme or port, unknown objects,
malformed paths. Each is refused before the socket opens; none is a server error."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from tests.fleet.test_live_path import _connect, memory_layer, session_cookie  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("memory_layer"),
]


def open_socket(path: str, user, *, host: bytes, origin: bytes, extra=()) -> tuple[bool, int]:
    headers = [session_cookie(user), (b"host", host), (b"origin", origin), *extra]
    return async_to_sync(_connect)(path, headers)


@pytest.mark.parametrize(
    ("host", "origin", "accepted"),
    [
        pytest.param(b"greenlight.test:8000", b"http://greenlight.test:8000", True, id="same"),
        pytest.param(b"greenlight.test", b"http://greenlight.test:80", True, id="default-port"),
        pytest.param(b"greenlight.test:8000", b"http://greenlight.test:9000", False, id="port"),
        pytest.param(b"greenlight.test:8000", b"http://greenlight.test", False, id="no-port"),
        pytest.param(b"greenlight.test", b"https://greenlight.test", False, id="scheme"),
        pytest.param(b"greenlight.test", b"http://other.test", False, id="host"),
        pytest.param(b"evil.test", b"http://evil.test", False, id="host-not-allowed"),
        pytest.param(b"greenlight.test", b"http://greenlight.test:99999", False, id="bad-port"),
        pytest.param(b"greenlight.test", b"null", False, id="opaque"),
    ],
)
def test_the_origin_must_be_this_site_by_scheme_host_and_port(
    bob, rack, settings, host, origin, accepted
):
    settings.ALLOWED_HOSTS = ["greenlight.test"]
    connected, _ = open_socket(f"/ws/rack/{rack.pk}/", bob, host=host, origin=origin)
    assert connected is accepted


def test_behind_a_tls_proxy_the_origin_must_be_https(bob, rack, settings):
    settings.ALLOWED_HOSTS = ["greenlight.test"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = [(b"x-forwarded-proto", b"https")]
    path = f"/ws/rack/{rack.pk}/"
    host = b"greenlight.test"
    assert open_socket(path, bob, host=host, origin=b"https://greenlight.test", extra=proxied)[0]
    assert not open_socket(path, bob, host=host, origin=b"http://greenlight.test", extra=proxied)[0]


def test_a_trusted_origin_is_accepted_exactly(bob, rack, settings):
    settings.ALLOWED_HOSTS = ["greenlight.test"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://console.example.com"]
    path = f"/ws/rack/{rack.pk}/"
    host = b"greenlight.test"
    assert open_socket(path, bob, host=host, origin=b"https://console.example.com")[0]
    assert not open_socket(path, bob, host=host, origin=b"http://console.example.com")[0]
    assert not open_socket(path, bob, host=host, origin=b"https://console.example.com:8443")[0]


@pytest.mark.parametrize(
    "path",
    [
        "/ws/rack/999999/",
        "/ws/site/999999/",
        "/ws/node/999999/",
        "/ws/rack/abc/",
        "/ws/rack/" + "9" * 40 + "/",
        "/ws/rack/",
        "/ws/nothing/",
        "/elsewhere",
    ],
)
def test_unknown_objects_and_malformed_paths_are_not_found(bob, settings, path):
    settings.ALLOWED_HOSTS = ["greenlight.test"]
    connected, code = open_socket(
        path, bob, host=b"greenlight.test", origin=b"http://greenlight.test"
    )
    assert (connected, code) == (False, 4404)


def test_a_known_rack_site_and_node_are_accepted(bob, node, settings):
    settings.ALLOWED_HOSTS = ["greenlight.test"]
    for path in (
        f"/ws/rack/{node.rack_id}/",
        f"/ws/site/{node.rack.site_id}/",
        f"/ws/node/{node.pk}/",
        "/ws/fleet/",
    ):
        connected, _ = open_socket(
            path, bob, host=b"greenlight.test", origin=b"http://greenlight.test"
        )
        assert connected, path
