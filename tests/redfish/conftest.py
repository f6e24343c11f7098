"""Fixtures: a lab hall per test (fast: certificates are EC keys) and one sushy-tools per run."""

from __future__ import annotations

import pytest

from lab.hall import LabBmc, LabHall
from provisioning.redfish import RedfishClient

from .sushy import start_fake_sushy


@pytest.fixture
def hall():
    """Three nodes, one per flavour, with the lab clock stopped: tests move time themselves."""
    with LabHall(3, flavours=("dell", "hpe", "supermicro"), speed=0, seed=7) as running:
        yield running


def lab_client(bmc: LabBmc, **kw) -> RedfishClient:
    """A client for a lab BMC over HTTPS, pinned to its certificate, with quick retries."""
    options = {"fingerprint": bmc.cert_fingerprint, "timeout": 2.0, "backoff": 0.01}
    options.update(kw)
    return RedfishClient(bmc.https_url, bmc.node.username, bmc.node.password, **options)


@pytest.fixture(scope="session")
def sushy(tmp_path_factory):
    """sushy-tools' emulator with its fake driver, basic auth and TLS, for the whole run."""
    try:
        running = start_fake_sushy(tmp_path_factory.mktemp("sushy"))
    except FileNotFoundError:
        pytest.skip("sushy-emulator is not installed")
    yield running
    running.stop()
