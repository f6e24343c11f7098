"""Virtual media against sushy-tools' emulator: insert, read back, eject, boot override to Cd."""

from __future__ import annotations

import http.server
import threading

import pytest

from provisioning.redfish import virtual_media
from tests.redfish.test_sushy import client

pytestmark = pytest.mark.peer


@pytest.fixture
def iso_server(tmp_path):
    """Two small 'ISOs' over plain HTTP on loopback: the emulator downloads what it inserts."""
    for name in ("a.iso", "b.iso"):
        (tmp_path / name).write_bytes(name.encode() * 4096)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kw):
            super().__init__(*args, directory=str(tmp_path), **kw)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_insert_reads_back_is_idempotent_and_replaces_another_medium(sushy, iso_server):
    with client(sushy) as c:
        path = virtual_media.find_cd(c)
        assert "VirtualMedia" in path
        virtual_media.eject(c, path)
        first = virtual_media.insert(c, f"{iso_server}/a.iso")
        assert first.inserted and virtual_media.same_image(first.image, f"{iso_server}/a.iso")
        again = virtual_media.insert(c, f"{iso_server}/a.iso")
        assert again == first
        second = virtual_media.insert(c, f"{iso_server}/b.iso")
        assert second.inserted and virtual_media.same_image(second.image, f"{iso_server}/b.iso")
        # With a medium in, the virtual CD is a boot target the BMC reads back.
        c.set_boot_override("Cd", once=True)
        assert c.boot_override().target == "Cd"
        ejected = virtual_media.eject(c, path)
        assert not ejected.inserted


def test_an_image_the_bmc_cannot_fetch_is_an_error_not_a_boot(sushy, iso_server):
    with client(sushy) as c:
        virtual_media.eject(c)
        with pytest.raises(virtual_media.errors.RedfishError):
            virtual_media.insert(c, f"{iso_server}/missing.iso")
        assert not virtual_media.state(c, virtual_media.find_cd(c)).inserted


def test_same_image_compares_names_only_when_the_bmc_keeps_a_name():
    assert virtual_media.same_image("http://h/x/node.iso", "http://h/x/node.iso")
    assert virtual_media.same_image("node.iso", "http://h/x/node.iso")
    assert not virtual_media.same_image("", "http://h/x/node.iso")
    assert not virtual_media.same_image("other.iso", "http://h/x/node.iso")


def test_a_bmc_without_uefi_http_boot_refuses_it_loudly(sushy, iso_server):
    """sushy's fake driver cannot record HttpBootUri (its libvirt driver can: the VM tier)."""
    with client(sushy) as c:
        with pytest.raises(virtual_media.errors.RedfishError):
            c.set_boot_override("UefiHttp", once=True, http_boot_uri=f"{iso_server}/a.iso")
        assert c.boot_override().target != "UefiHttp"
