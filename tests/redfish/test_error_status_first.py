"""A BMC's error status decides the error's type; its body (HTML, text, JSON) only adds words."""

from __future__ import annotations

import pytest

from provisioning.redfish import RedfishClient
from provisioning.redfish.errors import BmcError, NotJson, ResourceMissing

from .servers import json_answer, serve

HTML_404 = (404, "text/html", b"<html><head><title>404 Not Found</title></head></html>")
ROOT = {
    "@odata.id": "/redfish/v1/",
    "Systems": {"@odata.id": "/redfish/v1/Systems"},
    "ProtocolFeaturesSupported": {"ExpandQuery": {"NoLinks": True, "Levels": True}},
}
SYSTEMS = {"@odata.id": "/redfish/v1/Systems", "Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}
SYSTEM = {
    "@odata.id": "/redfish/v1/Systems/1",
    "Id": "1",
    "EthernetInterfaces": {"@odata.id": "/redfish/v1/Systems/1/EthernetInterfaces"},
}
NICS = {
    "@odata.id": "/redfish/v1/Systems/1/EthernetInterfaces",
    "Members": [{"@odata.id": f"/redfish/v1/Systems/1/EthernetInterfaces/{i}"} for i in range(4)],
}


def nic(index: int, **fields) -> tuple:
    body = {"@odata.id": f"/redfish/v1/Systems/1/EthernetInterfaces/{index}", "Id": str(index)}
    return json_answer({**body, **fields})


ROUTES = {
    "/redfish/v1": json_answer(ROOT),
    "/redfish/v1/Systems": json_answer(SYSTEMS),
    "/redfish/v1/Systems/1": json_answer(SYSTEM),
    "/redfish/v1/Systems/1/EthernetInterfaces": json_answer(NICS),
    # AMI MegaRAC writes words where a port has no MAC; others leave zeros or nothing.
    "/redfish/v1/Systems/1/EthernetInterfaces/0": nic(0, MACAddress="not available"),
    "/redfish/v1/Systems/1/EthernetInterfaces/1": nic(1, MACAddress="B8-3F-D2-0A-11-22"),
    "/redfish/v1/Systems/1/EthernetInterfaces/2": nic(
        2, MACAddress="00:00:00:00:00:00", PermanentMACAddress="b83fd20a1123"
    ),
    "/redfish/v1/Systems/1/EthernetInterfaces/3": nic(3, MACAddress=""),
}


def html_errors(method: str, path: str):
    """A BMC whose web server answers unknown paths (and $expand) with an HTML 404 page."""
    if "?" in path:
        return HTML_404
    return ROUTES.get(path.rstrip("/") or "/", HTML_404)


def client_for(url: str) -> RedfishClient:
    return RedfishClient(url, "admin", "pw", retries=0, use_sessions=False, allow_plain_http=True)


def test_html_404_is_missing_not_unparsable():
    with serve(html_errors) as url:
        with pytest.raises(ResourceMissing) as caught:
            client_for(url).get("/redfish/v1/Nowhere")
    assert caught.value.status == 404
    assert not isinstance(caught.value, NotJson)
    assert caught.value.url == f"{url}/redfish/v1/Nowhere"


def test_expand_refused_with_an_html_404_falls_back_to_member_reads():
    with serve(html_errors) as url:
        with client_for(url) as client:
            nics = client.ethernet_interfaces()
    assert [n["id"] for n in nics] == ["0", "1", "2", "3"]


def test_html_500_is_a_bmc_failure():
    page = (500, "text/html", b"<html><body>Internal Server Error</body></html>")
    with serve(lambda method, path: page if "Systems" in path else ROUTES["/redfish/v1"]) as url:
        with pytest.raises(BmcError) as caught:
            client_for(url).system_info()
    assert caught.value.status == 500


def test_html_on_success_is_still_not_json():
    page = (200, "text/html", b"<html><body>Please log in</body></html>")
    with serve(lambda method, path: page) as url:
        with pytest.raises(NotJson):
            client_for(url).open()


def test_only_real_macs_are_reported():
    with serve(html_errors) as url:
        with client_for(url) as client:
            nics = client.ethernet_interfaces()
            macs = client.mac_addresses()
    assert [n["mac"] for n in nics] == ["", "b8:3f:d2:0a:11:22", "b8:3f:d2:0a:11:23", ""]
    assert macs == ["b8:3f:d2:0a:11:22", "b8:3f:d2:0a:11:23"]
