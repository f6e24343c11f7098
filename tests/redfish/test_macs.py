"""MAC validation: words, zeros and malformed values are not MACs."""

from __future__ import annotations

import pytest

from provisioning.redfish.macs import normalize_mac


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("B8:3F:D2:0A:11:22", "b8:3f:d2:0a:11:22"),
        ("b8-3f-d2-0a-11-22", "b8:3f:d2:0a:11:22"),
        ("b83fd20a1122", "b8:3f:d2:0a:11:22"),
        (" 52:54:00:12:34:56 ", "52:54:00:12:34:56"),
        ("not available", None),
        ("N/A", None),
        ("", None),
        (None, None),
        (42, None),
        ("00:00:00:00:00:00", None),
        ("ff:ff:ff:ff:ff:ff", None),
        ("b8:3f-d2:0a:11:22", None),  # mixed separators
        ("b8:3f:d2:0a:11", None),  # five octets
        ("g8:3f:d2:0a:11:22", None),
    ],
)
def test_normalize_mac(raw, want):
    assert normalize_mac(raw) == want
