"""MAC addresses as BMCs write them, checked before anything stores one."""

from __future__ import annotations

import re

# Six octets with ":" or "-" between them, or twelve bare hex digits.
_SEPARATED = re.compile(r"^[0-9a-f]{2}([:-])[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}$")
_BARE = re.compile(r"^[0-9a-f]{12}$")
# Placeholders BMCs fill in for a port they cannot read: no node has these.
_PLACEHOLDERS = {"000000000000", "ffffffffffff"}


def normalize_mac(value: object) -> str | None:
    """The MAC as lower-case colon-separated octets, or None when `value` is not a MAC.

    BMCs put words where a MAC belongs ("not available" on AMI MegaRAC, "" on OpenBMC for a
    port without link) and zeros for an unread port; none of those may be stored as a MAC.
    """
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if _SEPARATED.match(text):
        digits = re.sub(r"[:-]", "", text)
    elif _BARE.match(text):
        digits = text
    else:
        return None
    if digits in _PLACEHOLDERS:
        return None
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))
