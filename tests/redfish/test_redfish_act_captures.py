"""`redfish_act --dry-run` against every capture: each write as the capture declares it takes it.

sushy-static serves each capture; the command reads it and records, never sends, its writes.
tests/redfish/declared.py checks each recorded request against the capture's own ActionInfo,
@Redfish.Settings objects, AllowableValues and ETags. A capture that lacks what an act needs must
end in a CommandError that names what is missing.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from . import declared
from .static import CAPTURES, captures, sushy_static

PASSWORD = "act-Secret-9f2"
# Captures whose inventory has no host BIOS entry: an update of "bios" must be refused there.
NO_HOST_BIOS = {
    "nvidia-bluefield3-bmc": "a DPU's own BMC: its UEFI entry (DPU_UEFI) is the DPU's",
    "openbmc-bmcweb-stock": "no host at all: the inventory holds the BMC's image only",
}
IMAGE = "https://media.example/boot.iso"


@pytest.fixture(scope="module", params=captures())
def served(request, tmp_path_factory):
    """One capture served by sushy-static, with its declarations read from its files."""
    name = request.param
    with sushy_static(CAPTURES / name, tmp_path_factory.mktemp(name)) as url:
        yield url, declared.Capture(CAPTURES / name)


def act(url: str, *args: str) -> list[dict]:
    """Run `redfish_act URL ARGS --dry-run` and return the requests it printed."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(
            "redfish_act",
            url,
            *args,
            "--dry-run",
            "--plain-http",
            "--username",
            "root",
            f"--password={PASSWORD}",
            stdout=out,
            stderr=err,
        )
    finally:
        assert PASSWORD not in out.getvalue() + err.getvalue()
    return json.loads(out.getvalue())


def refused(url: str, *args: str) -> str:
    with pytest.raises(CommandError) as raised:
        act(url, *args)
    assert PASSWORD not in str(raised.value)
    return str(raised.value)


@pytest.mark.parametrize("target", ["Cd", "Pxe", "Hdd"])
def test_boot_once(served, target):
    url, capture = served
    missing = declared.boot_refusal(capture, target)
    if missing:
        assert missing in refused(url, "boot-once", target)
        return
    requests = act(url, "boot-once", target)
    assert declared.check_boot(capture, requests, target) == []


def test_insert_media(served):
    url, capture = served
    if not capture.virtual_cds():
        assert "virtual CD" in refused(url, "insert-media", IMAGE)
        return
    requests = act(url, "insert-media", IMAGE)
    assert declared.check_insert(capture, requests, IMAGE) == []


@pytest.mark.parametrize("component", ["bmc", "bios"])
def test_update_firmware_from_a_uri(served, component):
    url, capture = served
    protocols = declared.simple_update_protocols(capture)
    scheme = "https" if protocols is None or "HTTPS" in protocols else "http"
    image_uri = f"{scheme}://firmware.example/{component}-9.9.9.bin"
    missing = declared.firmware_refusal(capture, by_file=False)
    if component == "bios" and capture.folder.name in NO_HOST_BIOS:
        missing = "no running bios entry"
    if missing:
        assert missing in refused(url, "update-firmware", image_uri, "--component", component)
        return
    requests = act(url, "update-firmware", image_uri, "--component", component)
    assert declared.check_simple_update(capture, requests, image_uri) == []


@pytest.mark.parametrize("component", ["bmc", "bios"])
def test_update_firmware_from_a_file(served, component, tmp_path):
    url, capture = served
    if not capture.update_service().get("MultipartHttpPushUri"):
        pytest.skip("this BMC takes no multipart push: a URI is its only way")
    image = tmp_path / f"{component}-9.9.9.bin"
    image.write_bytes(b"\x5a" * 4096)
    if component == "bios" and capture.folder.name in NO_HOST_BIOS:
        assert "no running bios entry" in refused(
            url, "update-firmware", str(image), "--component", "bios"
        )
        return
    requests = act(url, "update-firmware", str(image), "--component", component)
    assert declared.check_multipart(capture, requests, image.name, 4096) == []


def test_set_bios(served):
    url, capture = served
    missing = declared.bios_refusal(capture)
    attribute = declared.bios_attribute(capture)
    name, value = attribute if attribute else ("BootMode", "Uefi")
    pair = f"{name}={value if isinstance(value, str) and not _parses(value) else json.dumps(value)}"
    if missing:
        assert missing in refused(url, "set-bios", pair)
        return
    requests = act(url, "set-bios", pair)
    assert declared.check_bios(capture, requests, name, value) == []


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
