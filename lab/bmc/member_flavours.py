"""The BMC flavours of a GB200 NVL72 rack's members (issue 34): compute tray, NVLink switch
tray, power shelf, each a variation of the GB200 NVL BMC (OpenBMC, NVIDIA's ids).

- "gb200_tray": the GB200 NVL compute tray of the capture (nvidia-gb200), its BMC unchanged;
  build.SHAPES gives it the capture's parts (4 GB200 GPUs, 4 ConnectX-7, 2 BlueField-3).
- "nvl_switch": an NVLink switch tray. Its BMC serves the tray's NVLink fabric as a DMTF Fabric
  (Fabrics/NVLink_0) and its update bundle carries BMC, CPLD and NVOS images; the BMC restarts
  itself into the new bundle (no aux power cycle: that is the compute tray's). The product name
  is the one `nv show platform` prints on a GB200 switch tray (NVIDIA NVOS user manual for NVLink
  switches, 25.02: N5110_LD); the inventory ids follow the NVIDIA switch BMC manual's Chassis
  list (CPLD, ERoT). Versions are the lab's own.
- "power_shelf": a power shelf's controller. No public capture of one exists: its model string
  and versions are the lab's own. Its chassis reports whether the shelf's output is on
  (PowerState) and healthy; a tripped shelf reads Off, Critical.

This module reads no other lab module: flavours.py hands it the GB200 flavour to vary.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .flavours import Flavour

COMPUTE_TRAY, SWITCH_TRAY, POWER_SHELF = "gb200_tray", "nvl_switch", "power_shelf"
# The lab node kind each member flavour builds (the names are fleet's NodeKind values).
MEMBER_KIND = {
    COMPUTE_TRAY: "compute_tray",
    SWITCH_TRAY: "switch_tray",
    POWER_SHELF: "power_shelf",
}
SWITCH_TRAY_MODEL = "N5110_LD"
POWER_SHELF_MODEL = "NVL72 Power Shelf 33kW"


def member_flavours(gb200: Flavour) -> dict[str, Flavour]:
    """The rack members' flavours, as variations of the GB200 NVL flavour."""
    device = dict(
        # A device's BMC bundle runs once its BMC restarts itself; there is no host image to
        # stage for a host reset and no aux power cycle on these BMCs.
        bmc_activation="now",
        host_activation="host_reset",
        lists_device_firmware=False,
    )
    return {
        COMPUTE_TRAY: replace(gb200, name=COMPUTE_TRAY, member="compute_tray"),
        SWITCH_TRAY: replace(
            gb200,
            name=SWITCH_TRAY,
            model=SWITCH_TRAY_MODEL,
            manager_model="NVLink Switch Tray BMC",
            serial_prefix="MT24",
            extra_firmware=(
                ("FW_CPLD_0", "Software Inventory", "0.1C"),
                ("FW_ERoT_BMC_0", "Software Inventory", "01.03.0262.0000_n04"),
            ),
            member="switch_tray",
            **device,
        ),
        POWER_SHELF: replace(
            gb200,
            name=POWER_SHELF,
            manufacturer="Delta",
            model=POWER_SHELF_MODEL,
            manager_model="Power Shelf Controller",
            serial_prefix="DPS",
            extra_firmware=(("FW_PSU_0", "Software Inventory", "1.2.7"),),
            member="power_shelf",
            **device,
        ),
    }
