"""sushy-tools' emulator with its fake driver: one system, for the Redfish tests."""

from __future__ import annotations

from pathlib import Path

from lab.sushy import Sushy, start_sushy

# The fake driver's one system; each test run starts an emulator of its own.
SYSTEM_UUID = "5f0c1d1e-6a0b-4d55-9f1c-6d3b0e8a2c11"
SYSTEM_MAC = "52:54:00:12:34:56"


def start_fake_sushy(workdir: Path) -> Sushy:
    """The emulator serving one powered-off fake system with one NIC."""
    driver = {
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_FAKE_SYSTEMS": [
            {
                "uuid": SYSTEM_UUID,
                "name": "greenlight-fake",
                "power_state": "Off",
                "nics": [{"mac": SYSTEM_MAC, "ip": "172.22.0.100"}],
            }
        ],
    }
    return start_sushy(workdir, driver)
