"""What booting nodes fetch: each node's iPXE script carries that node's credential only."""

from __future__ import annotations

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent import boot_args
from provisioning.boot import credentials
from provisioning.boot.credentials import arm_for_boot, ephemeral_credential, ephemeral_for_mac
from provisioning.boot.path import BootMethod, boot_method
from tests.factories import make_node
from tests.support.scenes import booted_secret, make_run

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _script(live_server, mac: str) -> httpx.Response:
    return httpx.get(f"{live_server.url}/boot/v1/ipxe", params={"mac": mac}, timeout=10)


def test_each_nodes_ipxe_script_carries_its_own_credential_only(live_server, rack, manifest):
    alpha, beta = make_node(rack=rack), make_node(rack=rack)
    secrets = {}
    for node in (alpha, beta):
        secrets[node.serial] = booted_secret(make_run(node, phases_done=2))

    answer = _script(live_server, alpha.mac_addresses[0].upper().replace(":", "-"))
    assert answer.status_code == 200
    assert answer.text.startswith("#!ipxe")
    args = boot_args.parse(answer.text.replace("\n", " "))
    assert args.credential == secrets[alpha.serial]
    assert args.environment == "ephemeral"
    assert secrets[beta.serial] not in answer.text
    kernel = manifest.spec["ephemeral"]["kernel"]["url"]
    assert f"kernel {kernel} " in answer.text

    other = _script(live_server, "02:aa:bb:cc:dd:ee")
    assert other.status_code == 404
    assert all(secret not in other.text for secret in secrets.values())
    assert _script(live_server, "not-a-mac").status_code == 404


def test_a_node_without_a_live_run_gets_no_script(live_server, rack, manifest):
    node = make_node(rack=rack)
    run = make_run(node, phases_done=2)
    booted_secret(run)
    run.status = "succeeded"
    run.save(update_fields=["status"])
    assert _script(live_server, node.mac_addresses[0]).status_code == 404


def test_the_boot_method_is_the_manifests(manifest):
    assert boot_method({}) == BootMethod.PXE
    assert boot_method({"ephemeral": {"boot": "virtual_media"}}) == BootMethod.VIRTUAL_MEDIA


def test_the_database_finds_the_node_by_its_mac_in_any_spelling(rack, manifest):
    # The lookup must not read every live credential's node: at fleet scale that read, per
    # request, timed out the power-on burst's fetches.
    nodes = [make_node(rack=rack) for _ in range(5)]
    shouting = nodes[2]
    mac = shouting.mac_addresses[0]
    shouting.mac_addresses = [m.upper().replace(":", "-") for m in shouting.mac_addresses]
    shouting.save(update_fields=["mac_addresses"])
    wanted = {}
    for node in nodes:
        wanted[node.pk] = ephemeral_credential(make_run(node, phases_done=2)).pk
        arm_for_boot(node.pk)
    with CaptureQueriesContext(connection) as queries:
        found = ephemeral_for_mac(mac.upper())
    assert found is not None and found.pk == wanted[shouting.pk]
    assert len(queries) == 1
    assert mac.replace(":", "-") in queries[0]["sql"].lower()


def test_the_lookup_is_compiled_once_and_finds_what_the_orm_finds(rack, manifest, monkeypatch):
    nodes = [make_node(rack=rack) for _ in range(3)]
    for node in nodes[:2]:
        ephemeral_credential(make_run(node, phases_done=2))
        arm_for_boot(node.pk)
    ephemeral_credential(make_run(nodes[2], phases_done=2))  # not armed: no script
    read = credentials.ARMED_EPHEMERAL_BY_MAC
    built = []
    monkeypatch.setattr(
        credentials,
        "ARMED_EPHEMERAL_BY_MAC",
        type(read)(lambda colon, dash: built.append(colon) or read.build(colon, dash)),
    )
    for node in nodes:
        for mac in node.mac_addresses:
            dash = mac.replace(":", "-")
            expected = [c.pk for c in read.build(mac, dash)]
            assert [c.pk for c in credentials.ARMED_EPHEMERAL_BY_MAC.all(mac, dash)] == expected
            found = ephemeral_for_mac(dash.upper())
            assert (found.node_id if found else None) == (node.pk if node != nodes[2] else None)
    assert len(built) == 1
