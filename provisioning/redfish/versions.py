"""Firmware versions as BMCs write them, normalised per component kind before they are compared.

The same firmware reads differently in different places: Supermicro X13 writes its BIOS as
"BIOS Date: 08/04/2023 Ver 1.4" in the inventory and "1.4" on the system; HPE iLO 5 as
"2.72 Sep 04 2022" in the inventory and "iLO 5 v2.72" on the manager; NVIDIA GH200's HMC pads
GPU versions with blanks ("96.00.A6.00.01  "). A firmware phase compares normalised versions,
so none of these reads as drift.
"""

from __future__ import annotations

import re

from fleet.choices import ComponentKind

# "BIOS Date: 08/04/2023 Ver 1.4" (Supermicro X13): the version is what follows "Ver".
_SUPERMICRO_BIOS = re.compile(r"^BIOS Date:\s*\S+\s+Ver\s+(?P<v>\S+)$", re.IGNORECASE)
# "2.72 Sep 04 2022" (HPE iLO 5 inventory): a build date after the version.
_DATED = re.compile(r"^(?P<v>\d+(?:\.\d+)+)\s+[A-Z][a-z]{2}\s+\d{1,2}\s+\d{4}$")
# "iLO 5 v2.72" (HPE iLO 5 manager): the product before the version.
_PRODUCT_V = re.compile(r"^iLO\s+\d+\s+v(?P<v>\S+)$", re.IGNORECASE)
# Hex-dotted versions (NVIDIA GPU/NVSwitch VBIOS "96.00.A6.00.01"): case carries no meaning.
_HEX_KINDS = {ComponentKind.GPU, ComponentKind.NVSWITCH, ComponentKind.HGX}


def normalize_version(kind: str | None, raw: object) -> str:
    """The comparable form of a version for a component kind (trimmed, one space inside)."""
    text = " ".join(str(raw if raw is not None else "").split())
    for pattern in (_SUPERMICRO_BIOS, _DATED, _PRODUCT_V):
        found = pattern.match(text)
        if found and kind in (ComponentKind.BIOS, ComponentKind.BMC):
            return found["v"]
    if kind in _HEX_KINDS:
        return text.upper()
    return text


def same_version(kind: str | None, a: object, b: object) -> bool:
    """Whether two versions of a component kind are the same once normalised."""
    return normalize_version(kind, a) == normalize_version(kind, b)
