"""The live socket's refusals over real HTTP, through daphne: malformed paths and unknown objects
were a 500 (or accepted); now the handshake is refused before the socket opens.

Daphne answers every refusal before accept with 403: the application close code (4404) is what
an ASGI test client sees, the status line is what a browser or a scanner sees.
"""

from __future__ import annotations

import base64
import os
import socket

import pytest

from tests.fleet.test_live_path import session_cookie

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def signed_in(user) -> str:
    name, value = session_cookie(user)
    assert name == b"cookie"
    return value.decode()


def handshake_status(port: int, path: str, origin: str, cookie: str) -> str:
    """The status line daphne answers to a signed-in WebSocket upgrade for `path`."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Origin: {origin}\r\nCookie: {cookie}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode())
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(1024)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0].decode()


@pytest.mark.parametrize(
    "path", ["/ws/rack/abc/", "/ws/rack/999999/", "/ws/nothing/", "/ws/rack/" + "9" * 40 + "/"]
)
def test_malformed_and_unknown_paths_are_refused_not_a_server_error(server, bob, path):
    origin = f"http://127.0.0.1:{server.port}"
    status = handshake_status(server.port, path, origin, signed_in(bob))
    assert status == "HTTP/1.1 403 Access denied", status


def test_a_page_on_another_port_of_the_same_host_is_refused(server, bob, rack):
    path, cookie = f"/ws/rack/{rack.pk}/", signed_in(bob)
    same_site = handshake_status(server.port, path, f"http://127.0.0.1:{server.port}", cookie)
    assert same_site == "HTTP/1.1 101 Switching Protocols"
    other_port = handshake_status(server.port, path, "http://127.0.0.1:1", cookie)
    assert other_port == "HTTP/1.1 403 Access denied", other_port
