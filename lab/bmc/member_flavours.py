"""The BMC flavours of a GB200 NVL72 rack's members (issue 34): compute tray, NVLink switch
tray, power shelf, each a variation of the GB200 NVL BMC (OpenBMC, NVIDIA's ids).

Sources, cited beside each value below (commits are the snapshots read):
  NVOS   NVIDIA NVOS user manual for NVLink switches, 25.02 (`nv show platform`: N5110_LD).
  SWBMC  NVIDIA Switch BMC user manual v88.0002.1301, "User Interface Redfish Commands"
         (docs.nvidia.com/networking/display/nvidiaswitchbmcusermanualv8800021301).
  NVFW   NVIDIA/open-nvfwupd@bacc440e6c03c19d2bf358f6a0f0e062ae5bbd50:
         firmware_update_guide/docs/examples/gb200NVL.rst ("GB200 NVL Switch Tray Update") and
         FactoryMode/TrayFlowFunctions/{switch,power_shelf}_factory_flow_functions.py.
  NSM    NVIDIA/bare-metal-manager-core@7778162cf43764001b131a939fdea586d04b4eeb:
         crates/component-manager/proto/nvswitch-manager.proto.
  PSM    NVIDIA/bare-metal-manager-rest@e48b16fd3d9e3a9812b4a19211722e3751db7113:
         powershelf-manager/pkg/redfish/client.go (a LiteOn shelf's PMC).
  SHELF  NVIDIA DGX GB200 firmware update guide, "Power Shelf Firmware Update Process"
         (docs.nvidia.com/dgx/dgxgb200-fw-update-guide/pwshelf-fw-update.html) and the nvfwupd
         guide's PowerShelf examples (docs.nvidia.com/multi-node-nvlink-systems/nvfupd-guide/
         examples/powershelf.html), a Delta shelf.

- "gb200_tray": the GB200 NVL compute tray of the capture (nvidia-gb200), its BMC unchanged;
  build.SHAPES gives it the capture's parts (4 GB200 GPUs, 4 ConnectX-7, 2 BlueField-3).
- "nvl_switch": an NVLink switch tray. Its BMC serves the tray's NVLink fabric as a DMTF Fabric
  (Fabrics/NVLink_0). What is known of its writes: its firmware ships as three bundles, BMC with
  its ERoT and FPGA, SBIOS with its ERoT, and CPLD (NVFW); NVIDIA's own switch manager writes the
  BMC and BIOS images through the BMC's Redfish, the CPLD and NVOS through NVOS over SSH (NSM);
  downgrades are allowed by default (NVFW); the new images run after the tray is AC cycled
  (NVFW), which over Redfish is Systems/System_0 ComputerSystem.Reset PowerCycle (NVFW's
  switch flow; NSM lists On, ForceOn, ForceOff, GracefulShutdown, GracefulRestart, ForceRestart
  and PowerCycle as the tray's reset types). The lab's tray keeps every written BMC or BIOS
  image pending (the old version reported) until that PowerCycle (activation "power_cycle"),
  and offers NSM's reset types; which push URI the switch BMC offers is not public (SWBMC names
  an "Update Firmware" API without its URI), so the GB200 tray's multipart push stays. Its
  BMC lists the tray's first NVSwitch as Chassis MGX_NVSwitch_0, the id by which NVIDIA's
  infra controller tells a switch from other BMCs (NSM's repository, crates/site-explorer/src/
  redfish.rs is_switch; crates/bmc-mock/src/hw/nvidia_switch_nd5200_ld.rs serves it with Model
  N5200_LD and the switch's serial): the lab's one chassis is that one, with the tray's model.
- "power_shelf": a Delta power shelf's power management controller (PMC). It takes an image by
  an HTTP push to /redfish/v1/UpdateService/update (SHELF's curl; NVFW posts it as multipart
  UpdateFile there), not at the compute tray's update-multipart; its UpdateService's
  HttpPushUriApplyTime is OnReset by default (the image runs at the PMC's next reboot) and
  Immediate once PATCHed, which NVIDIA's tools do before every push (SHELF: nvfwupd 2.0.9; PSM:
  SetHttpPushUriApplyTimeImmediate). The lab's shelf serves HttpPushUriOptions.
  HttpPushUriApplyTime (the DMTF UpdateService schema's property) OnReset at start: an image
  pushed then waits for the PMC's reboot (a Manager.Reset); a PATCH to Immediate makes the next
  ones run as soon as written, and a value outside its AllowableValues is refused (400
  PropertyValueNotInList). Which values a real PMC lists is not public: the lab lists the two
  the sources name. Power: PSM posts Chassis.ForceOff/Chassis.On and Manager.Reset
  (GracefulRestart, ForceRestart) to a LiteOn PMC; the lab's shelf answers the GB200 tray's
  resets. What a shelf refuses is not public. Its chassis reports whether the shelf's output is
  on (PowerState) and healthy; a tripped shelf reads Off, Critical. The PMC lists its firmware
  as nvfwupd shows a Delta shelf's (SHELF, "Example 1: Delta PowerShelf"): the running image as
  FW_PMC_primary (the version a PMC update changes), its backup partition as FW_PMC_alt, its
  ERoT and six PSUs.

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
SWITCH_TRAY_MODEL = "N5110_LD"  # NVOS `nv show platform`; NVFW show_version "System Model"
SWITCH_TRAY_CHASSIS = "MGX_NVSwitch_0"
# The Delta shelf's model as nvfwupd prints it (SHELF, "Example 1: Delta PowerShelf").
POWER_SHELF_MODEL = "AHE50V660A33KWL"
# The PMC's running image and its backup partition, as nvfwupd lists a Delta shelf (SHELF).
POWER_SHELF_PMC_ID, POWER_SHELF_PMC_BACKUP_ID = "FW_PMC_primary", "FW_PMC_alt"
# Where a power shelf's PMC takes an image (SHELF: POST .../UpdateService/update; NVFW
# power_shelf_factory_flow_functions.py update_firmware: multipart UpdateFile to the same URI).
POWER_SHELF_PUSH_URI = "/redfish/v1/UpdateService/update"
# The shelf's HttpPushUriApplyTime at start, and the values it takes (SHELF, PSM).
POWER_SHELF_APPLY_TIME, POWER_SHELF_APPLY_TIMES = "OnReset", ("Immediate", "OnReset")
# The switch tray's ComputerSystem.Reset types (NSM); PowerCycle is its AC cycle (NVFW).
SWITCH_TRAY_RESET_TYPES = ("On", "ForceOn", "ForceOff", "GracefulShutdown", "GracefulRestart",
                           "ForceRestart", "PowerCycle")  # fmt: skip


def member_flavours(gb200: Flavour) -> dict[str, Flavour]:
    """The rack members' flavours, as variations of the GB200 NVL flavour."""
    # No aux power cycle on these BMCs: the shelf's images run when its HttpPushUriApplyTime
    # says (update_service.py), the switch tray's at its AC cycle (see the module docstring).
    device = dict(bmc_activation="now", host_activation="host_reset", lists_device_firmware=False)
    cycled = dict(device, bmc_activation="power_cycle", host_activation="power_cycle")
    return {
        COMPUTE_TRAY: replace(gb200, name=COMPUTE_TRAY, member="compute_tray"),
        SWITCH_TRAY: replace(
            gb200,
            name=SWITCH_TRAY,
            model=SWITCH_TRAY_MODEL,
            manager_model="NVLink Switch Tray BMC",
            serial_prefix="MT24",  # NVFW show_version: "Serial number: MT2438X01107"
            # The chassis NVIDIA's infra controller knows a switch tray by (NSM's repository:
            # crates/site-explorer/src/redfish.rs is_switch; its N5200_LD mock serves it with
            # the switch's model). The lab serves one chassis, the system's.
            chassis_id=SWITCH_TRAY_CHASSIS,
            extra_firmware=(
                # SWBMC's FirmwareInventory example lists CPLD_0 first; the BMC's ERoT rides in
                # its bundle (NVFW: nvfw_GB200-P4978_0004 is BMC, EROT, FPGA). Versions as
                # NVFW's show_version prints CPLD1 and EROT-BMC for a GB200 switch tray.
                ("CPLD_0", "Software Inventory", "CPLD000370_REV0500"),
                ("FW_ERoT_BMC_0", "Software Inventory", "01.04.0008.0000_n04"),
            ),
            member="switch_tray",
            **cycled,
        ),
        POWER_SHELF: replace(
            gb200,
            name=POWER_SHELF,
            manufacturer="Delta",
            model=POWER_SHELF_MODEL,
            manager_model="Power Management Controller",  # PSM's PowerManagementController
            manager_id="PMC_0",  # SHELF: GET /redfish/v1/Managers/PMC_0 for the part number
            serial_prefix="THAS",  # SHELF: "Serial number: THASQ25220015"
            multipart_path=POWER_SHELF_PUSH_URI,
            # The PMC's running image under the id a Delta shelf gives it (SHELF); the bios
            # entry stays the GB200 BMC's, which no shelf phase reads.
            inventory_ids={**gb200.inventory_ids, "bmc": POWER_SHELF_PMC_ID},
            extra_firmware=(
                # As nvfwupd lists a Delta shelf (SHELF): the PMC's other partition, its ERoT
                # and its six PSUs (a shelf holds 6 PSUs of 5.5 kW: BCM's power shelf chapter).
                (POWER_SHELF_PMC_BACKUP_ID, "Software Inventory", "3.2.4"),
                ("FW_ERoT_BMC_0", "Software Inventory", "1203"),
                *((f"FW_PSU_{n}", "Software Inventory", "01050105") for n in range(1, 7)),
            ),
            member="power_shelf",
            **device,
        ),
    }
