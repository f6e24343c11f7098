"""Versions normalised per component kind: the same firmware written two ways is one version."""

from __future__ import annotations

import pytest

from provisioning.redfish.versions import normalize_version, same_version


@pytest.mark.parametrize(
    ("kind", "a", "b"),
    [
        ("bios", "BIOS Date: 08/04/2023 Ver 1.4", "1.4"),  # Supermicro X13 inventory vs system
        ("bmc", "2.72 Sep 04 2022", "iLO 5 v2.72"),  # HPE iLO 5 inventory vs manager
        ("hgx", "96.00.A6.00.01  ", "96.00.A6.00.01"),  # GH200 HMC pads with blanks
        ("gpu", "96.00.a6.00.01", "96.00.A6.00.01"),
        ("nic", " 28.39.1002", "28.39.1002"),
        ("bios", "A47 v2.58 (05/19/2022)", "A47 v2.58  (05/19/2022)"),
    ],
)
def test_same_firmware_written_two_ways(kind, a, b):
    assert same_version(kind, a, b)


@pytest.mark.parametrize(
    ("kind", "a", "b"),
    [
        ("bios", "BIOS Date: 08/04/2023 Ver 1.4", "1.3"),
        ("bmc", "2.72 Sep 04 2022", "2.78"),
        ("nvme", "gdc7302q", "GDC7302Q"),  # drive revisions keep their case
        ("nic", "28.39.1002", "28.39.10020"),
    ],
)
def test_different_firmware_stays_different(kind, a, b):
    assert not same_version(kind, a, b)


def test_a_date_is_only_dropped_for_bios_and_bmc():
    assert normalize_version("bios", "BIOS Date: 08/04/2023 Ver 1.4") == "1.4"
    assert normalize_version("nic", "BIOS Date: 08/04/2023 Ver 1.4") == (
        "BIOS Date: 08/04/2023 Ver 1.4"
    )
    assert normalize_version(None, None) == ""
