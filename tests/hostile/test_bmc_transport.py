"""The Redfish transport against a hostile or broken BMC, over real HTTP on loopback.

A BMC error whose @Message.ExtendedInfo is not a list was a TypeError (a traceback from `manage.py
enroll`); plain-HTTP BMC addresses were accepted, and Basic credentials went out again after a 401.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from provisioning.redfish import RedfishClient
from provisioning.redfish.errors import AuthenticationRefused, ConfigurationError, RequestRejected

PASSWORD = "plain-Http-Pass"
ROOT = {
    "@odata.id": "/redfish/v1/",
    "Systems": {"@odata.id": "/redfish/v1/Systems"},
    "SessionService": {"@odata.id": "/redfish/v1/SessionService"},
    "Links": {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}},
}


@dataclass
class Seen:
    """What a BMC received: method, path, and whether the request carried a credential."""

    requests: list[tuple[str, str, bool]] = field(default_factory=list)

    def with_credentials(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p, creds in self.requests if creds]


@contextmanager
def bmc(answers: dict[tuple[str, str], tuple[int, dict, dict]]) -> Iterator[tuple[str, Seen]]:
    """A BMC on loopback answering (method, path) -> (status, headers, body); records requests."""
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            sent = self.rfile.read(length) if length else b""
            basic = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
            carries = (
                self.headers.get("Authorization") == f"Basic {basic}"
                or bool(self.headers.get("X-Auth-Token"))
                or PASSWORD.encode() in sent
            )
            path = self.path.rstrip("/") or "/"
            seen.requests.append((self.command, path, carries))
            status, headers, body = answers.get(
                (self.command, path), (404, {}, {"error": {"message": "no such thing"}})
            )
            payload = json.dumps(body).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_DELETE = _reply

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def plain_client(url: str, **kw) -> RedfishClient:
    return RedfishClient(url, "admin", PASSWORD, retries=0, allow_plain_http=True, **kw)


@pytest.mark.parametrize(
    "extended",
    [5, "a string", {"Message": "The value 'X' is not valid."}, None, [1, 2], {"nested": [5]}],
    ids=["int", "str", "object", "null", "list-of-ints", "object-without-message"],
)
def test_an_error_whose_extended_info_is_not_a_list_is_a_typed_error(extended):
    error = {"error": {"message": "Bad request", "@Message.ExtendedInfo": extended}}
    answers = {
        ("GET", "/redfish/v1"): (200, {}, ROOT),
        ("PATCH", "/redfish/v1/Systems/1"): (400, {}, error),
    }
    with bmc(answers) as (url, _):
        client = plain_client(url, use_sessions=False)
        with pytest.raises(RequestRejected) as caught:
            client.transport.request("PATCH", "/redfish/v1/Systems/1", json={"x": 1})
    assert str(caught.value).startswith("request rejected: PATCH answered 400: Bad request")
    if isinstance(extended, dict) and "Message" in extended:
        assert "The value 'X' is not valid." in str(caught.value)


def test_a_plain_http_bmc_is_refused_unless_allowed():
    with pytest.raises(ValueError, match="plain HTTP, which would send the BMC password"):
        RedfishClient("http://127.0.0.1:9", "admin", PASSWORD)
    RedfishClient("http://127.0.0.1:9", "admin", PASSWORD, allow_plain_http=True)  # no error


def test_over_plain_http_basic_credentials_are_not_sent_again_after_a_401():
    refused = (401, {"WWW-Authenticate": "Basic"}, {"error": {"message": "bad credentials"}})
    answers = {("GET", "/redfish/v1"): (200, {}, ROOT), ("GET", "/redfish/v1/Systems"): refused}
    with bmc(answers) as (url, seen):
        client = plain_client(url, use_sessions=False)
        client.open()
        with pytest.raises(AuthenticationRefused):
            client.transport.get("/redfish/v1/Systems")
        with pytest.raises(AuthenticationRefused, match="not sent again"):
            client.transport.get("/redfish/v1/Systems")
    assert seen.with_credentials() == [("GET", "/redfish/v1/Systems")]


def test_over_plain_http_an_expired_session_is_not_renewed_with_the_password():
    session = (
        201,
        {"X-Auth-Token": "tok-1", "Location": "/redfish/v1/SessionService/Sessions/1"},
        {},
    )
    refused = (401, {}, {"error": {"message": "session expired"}})
    answers = {
        ("GET", "/redfish/v1"): (200, {}, ROOT),
        ("POST", "/redfish/v1/SessionService/Sessions"): session,
        ("GET", "/redfish/v1/Systems"): refused,
    }
    with bmc(answers) as (url, seen):
        client = plain_client(url)
        client.open()
        with pytest.raises(AuthenticationRefused):
            client.transport.get("/redfish/v1/Systems")
    logins = [r for r in seen.requests if r[0] == "POST"]
    assert len(logins) == 1  # the first login only: no second password over plain HTTP


def test_credentials_never_follow_a_link_or_a_redirect_to_another_origin():
    with bmc({}) as (elsewhere, seen_elsewhere):
        answers = {
            ("GET", "/redfish/v1"): (200, {}, ROOT),
            ("GET", "/redfish/v1/Systems"): (302, {"Location": f"{elsewhere}/redfish/v1/x"}, {}),
        }
        with bmc(answers) as (url, _):
            client = plain_client(url, use_sessions=False)
            client.open()
            answer = client.transport.request("GET", "/redfish/v1/Systems")
            assert answer.status == 302  # not followed
            with pytest.raises(ConfigurationError, match="another origin"):
                client.transport.request("GET", answer.location)
            https_twin = url.replace("http://", "https://")
            with pytest.raises(ConfigurationError, match="another origin"):
                client.transport.request("GET", f"{https_twin}/redfish/v1/")
    assert seen_elsewhere.requests == []
