"""Each bad answer a BMC can give becomes a typed error naming the URL and the reason."""

from __future__ import annotations

import pytest

from provisioning.redfish import RedfishClient
from provisioning.redfish.errors import (
    AuthenticationRefused,
    CertificateMismatch,
    CertificateUntrusted,
    InvalidJson,
    MissingOdataId,
    NotJson,
    ResourceMissing,
)

from .conftest import lab_client
from .servers import json_answer, serve

PASSWORD = "s3cret-Not-For-Logs"
ROOT = {"@odata.id": "/redfish/v1/", "Systems": {"@odata.id": "/redfish/v1/Systems"}}


def bmc(routes: dict[str, tuple]):
    def answer(method, path):
        return routes.get(path.rstrip("/") or "/", json_answer({"error": {"message": "nope"}}, 404))

    return serve(answer)


def client_for(url: str) -> RedfishClient:
    return RedfishClient(
        url, "admin", PASSWORD, retries=0, use_sessions=False, allow_plain_http=True
    )


def assert_clean(exc: Exception) -> None:
    assert PASSWORD not in str(exc)


def test_html_page_is_not_json():
    page = (200, "text/html", b"<html><body>Please log in</body></html>")
    with bmc({"/redfish/v1": page}) as url:
        with pytest.raises(NotJson) as caught:
            client_for(url).open()
    assert "expected JSON, the BMC answered an HTML page (HTTP 200)" in str(caught.value)
    assert caught.value.url == f"{url}/redfish/v1/"
    assert_clean(caught.value)


def test_invalid_json():
    broken = (200, "application/json", b'{"@odata.id": "/redfish/v1/", "Systems": ')
    with bmc({"/redfish/v1": broken}) as url:
        with pytest.raises(InvalidJson, match="does not parse as JSON") as caught:
            client_for(url).open()
    assert f"[{url}/redfish/v1/]" in str(caught.value)


def test_401_is_authentication_refused():
    refused = json_answer({"error": {"message": "Invalid credentials"}}, 401)
    with bmc({"/redfish/v1": json_answer(ROOT), "/redfish/v1/Systems": refused}) as url:
        with pytest.raises(AuthenticationRefused) as caught:
            client_for(url).system_info()
    assert str(caught.value) == (
        f"authentication refused: GET answered 401: Invalid credentials [{url}/redfish/v1/Systems]"
    )
    assert_clean(caught.value)


def test_404_on_a_link_is_resource_missing():
    systems = {
        "@odata.id": "/redfish/v1/Systems",
        "Members": [{"@odata.id": "/redfish/v1/Systems/gone"}],
    }
    routes = {"/redfish/v1": json_answer(ROOT), "/redfish/v1/Systems": json_answer(systems)}
    with bmc(routes) as url:
        with pytest.raises(ResourceMissing, match="resource missing: GET answered 404") as caught:
            client_for(url).system_info()
    assert caught.value.url == f"{url}/redfish/v1/Systems/gone"


def test_missing_odata_id_on_a_member_link():
    systems = {"@odata.id": "/redfish/v1/Systems", "Members": [{"href": "/redfish/v1/Systems/1"}]}
    routes = {"/redfish/v1": json_answer(ROOT), "/redfish/v1/Systems": json_answer(systems)}
    with bmc(routes) as url:
        with pytest.raises(MissingOdataId, match="lacks its @odata.id") as caught:
            client_for(url).system_info()
    assert caught.value.url == f"{url}/redfish/v1/Systems"


def test_missing_odata_id_on_a_resource():
    routes = {"/redfish/v1": json_answer(ROOT), "/redfish/v1/Systems": json_answer({"Members": []})}
    with bmc(routes) as url:
        with pytest.raises(MissingOdataId):
            client_for(url).system_info()


def test_wrong_certificate_is_refused_before_credentials_are_sent(hall):
    bmc0, bmc1 = hall.bmc(0), hall.bmc(1)
    client = lab_client(bmc0, fingerprint=bmc1.cert_fingerprint)
    with pytest.raises(CertificateMismatch) as caught:
        client.open()
    message = str(caught.value)
    assert bmc0.cert_fingerprint in message and bmc1.cert_fingerprint in message
    assert caught.value.url.startswith(bmc0.https_url)
    assert bmc0.node.requests == 0  # the handshake failed: nothing reached the BMC
    assert bmc0.node.password not in message


def test_unpinned_self_signed_certificate_is_not_trusted(hall):
    client = lab_client(hall.bmc(0), fingerprint=None)
    with pytest.raises(CertificateUntrusted, match="no fingerprint pinned"):
        client.open()
