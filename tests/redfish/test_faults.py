"""Every lab fault, seen through the client: typed errors, bounded retries, unknown power."""

from __future__ import annotations

import threading

import pytest

from provisioning.redfish import PowerAction, PowerState, TaskState
from provisioning.redfish.errors import (
    AuthenticationRefused,
    BmcBusy,
    BmcUnreachable,
    ConfigurationError,
)
from provisioning.redfish.transport import bmc_slot

from .conftest import lab_client

BOOT = 60


def test_503s_are_retried_with_backoff_and_succeed(hall):
    bmc = hall.bmc(0)
    hall.set_fault(0, "bmc_503:0.5")
    with lab_client(bmc, retries=8) as client:
        for _ in range(5):
            assert client.system_info().serial == bmc.node.serial
    # More requests reached the BMC than the client made: the 503s were retried.
    assert bmc.node.requests > 5 + 3


def test_a_bmc_that_stays_busy_is_a_typed_transient_error(hall):
    hall.set_fault(0, "bmc_503:1.0")
    client = lab_client(hall.bmc(0), retries=2)
    with pytest.raises(BmcBusy, match="503") as caught:
        client.open()
    assert caught.value.transient
    assert hall.bmc(0).node.requests == 3  # one try and two retries, then give up


def test_timeout_is_unreachable_and_not_retried(hall):
    hall.set_fault(1, "bmc_timeout:1.0")
    client = lab_client(hall.bmc(1), timeout=0.3)
    with pytest.raises(BmcUnreachable, match="timed out"):
        client.open()
    assert hall.bmc(1).node.requests == 1


def test_unreachable_bmc_is_typed_and_power_is_unknown_not_off(hall):
    bmc = hall.bmc(2)
    with lab_client(bmc, retries=1) as client:
        assert client.power_state() is PowerState.OFF
        hall.set_fault(2, "bmc_unreachable")
        assert client.power_state() is PowerState.UNKNOWN
        with pytest.raises(BmcUnreachable, match="connection failed") as caught:
            client.system_info()
        assert bmc.https_url in caught.value.url
        hall.clear_fault(2)


def test_wrong_credentials_are_refused_with_the_url_and_no_password(hall):
    bmc = hall.bmc(0)
    hall.set_fault(0, "wrong_credentials")
    client = lab_client(bmc)
    with pytest.raises(AuthenticationRefused) as caught:
        client.open()
        client.system_info()
    assert "401" in str(caught.value) and "/redfish/v1/" in str(caught.value)
    assert bmc.node.password not in str(caught.value)


def test_failing_firmware_update_ends_failed_and_keeps_the_old_version(hall):
    bmc = hall.bmc(0)
    hall.set_fault(0, "firmware_update_fails:bios")
    with lab_client(bmc) as client:
        client.reset(PowerAction.ON)
        staged = client.update_firmware(image_uri="http://files.test/bios-3.0.0.bin")
        hall.advance(300)
        status = client.task_status(staged.task_monitor)
        assert status.state is TaskState.FAILED
        assert "failed verification" in status.messages[0]
        client.reset(PowerAction.RESTART)
        hall.advance(BOOT)
        assert client.system_info().bios_version == "2.19.1"


@pytest.mark.parametrize(
    ("fault", "second_reset_slow"), [("slow_reset", True), ("slow_reset_once", False)]
)
def test_a_slow_reset_keeps_the_node_powering_on_longer(hall, fault, second_reset_slow):
    hall.set_fault(1, f"{fault}:20")
    with lab_client(hall.bmc(1)) as client:
        client.reset(PowerAction.ON)
        hall.advance(BOOT)
        assert client.power_state() is PowerState.POWERING_ON
        hall.advance(30 * 20)
        assert client.power_state() is PowerState.ON
        client.reset(PowerAction.RESTART)
        hall.advance(BOOT)
        # slow_reset is a slow machine; slow_reset_once is one slow reset, then healthy ones.
        assert (client.power_state() is not PowerState.ON) == second_reset_slow


def test_ignored_power_on_is_caught_by_read_back(hall):
    hall.set_fault(0, "power_on_ignored")
    with lab_client(hall.bmc(0)) as client:
        assert client.reset(PowerAction.ON).status == 204
        hall.advance(BOOT)
        assert client.power_state() is PowerState.OFF  # a 2xx was not the truth
        client.reset(PowerAction.ON)
        hall.advance(BOOT)
        assert client.power_state() is PowerState.ON


def test_supermicro_licence_refusal_is_a_configuration_error_reported_once(hall):
    bmc = hall.bmc(2)
    hall.set_fault(2, "licence_missing")
    with lab_client(bmc) as client:
        with pytest.raises(ConfigurationError, match="licence required.*SFT-DCMS") as first:
            client.set_bios_attributes({"PcieAspm": "Disabled"})
        assert not first.value.transient
        before = bmc.node.requests
        with pytest.raises(ConfigurationError, match="licence required"):
            client.transport.request("PATCH", first.value.url, json={"Attributes": {}})
        assert bmc.node.requests == before  # not asked again
        with pytest.raises(ConfigurationError, match="licence"):
            client.update_firmware(image=b"x", filename="bios-2.2.bin")


def test_concurrent_requests_to_one_bmc_are_capped(hall):
    bmc = hall.bmc(0)
    client = lab_client(bmc, max_concurrency=2)
    client.open()
    # The process-wide slot of this BMC (an earlier hall may have left one for the same
    # address and port): take every place in it.
    slot = bmc_slot(bmc.https_url, 2)
    assert slot is client.transport._slot
    taken = 0
    while slot.acquire(blocking=False):
        taken += 1
    assert taken >= 2
    done = threading.Event()
    worker = threading.Thread(target=lambda: (client.system_info(), done.set()))
    worker.start()
    assert not done.wait(0.2)  # waits for a free slot instead of piling on the BMC
    slot.release()
    assert done.wait(5)
    for _ in range(taken - 1):
        slot.release()
    worker.join()
    client.close()
