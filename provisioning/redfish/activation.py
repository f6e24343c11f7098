"""How a component's new firmware image is made to run once the BMC has written it.

Most platforms run a host image (BIOS, HGX) after a host reset, the caller's own reboot, and a
BMC image after the BMC's own restart, which the caller waits out by reading the BMC's version;
it resets the host only for a version that never moves (provisioning.core.phases.oob
BMC_RESTART_WAIT_S). Two do not: an NVIDIA
GB200/GB300 tray keeps reporting the old version, the new one pending, until its aux power is
cycled, and a Lenovo XCC runs a new BMC image only after a manager reset. Each rule is a row of
the vendor quirk table (quirks.QUIRK_TABLE); `rule_for` is the one place that picks among them.
An NVLink switch tray, a rack device, runs a new BMC or BIOS image only after its AC power
cycle, ComputerSystem.Reset PowerCycle (NVIDIA/open-nvfwupd@bacc440e FactoryMode/
TrayFlowFunctions/switch_factory_flow_functions.py; the tray's reset types in NVIDIA/
bare-metal-manager-core crates/component-manager/proto/nvswitch-manager.proto). Its BMC says
what it is the way NVIDIA's own infra controller reads it, a Chassis MGX_NVSwitch_0 (its quirk
row); a tray whose BMC lists no such chassis is still one when it was enrolled as one.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from fleet.choices import NodeKind

from . import errors, quirks
from .client import SERVICE_ROOT
from .models import Staged

if TYPE_CHECKING:
    from .client import RedfishClient


class Activation(enum.StrEnum):
    """What makes a written image run."""

    # The caller reboots the host (every platform without a row); for a BMC image it first
    # waits for the BMC to restart itself with it.
    HOST_RESET = "host_reset"
    MANAGER_RESET = "manager_reset"  # Manager.Reset GracefulRestart (Lenovo XCC, its BMC)
    AUX_POWER_RESET = "aux_power_reset"  # NvidiaChassis.AuxPowerReset (GB200/GB300 trays)
    POWER_CYCLE = "power_cycle"  # ComputerSystem.Reset PowerCycle (NVLink switch trays)


# The GB200 NVL tray's chassis that offers the aux power cycle (capture nvidia-gb200,
# Chassis/BMC_0 Actions.Oem); the host's own Links.Chassis names it on that capture too.
AUX_POWER_CHASSIS = "/redfish/v1/Chassis/BMC_0"
AUX_POWER_ACTION = "#NvidiaChassis.AuxPowerReset"
AUX_POWER_RESET_TYPE = "AuxPowerCycleForce"
MANAGER_RESET_TYPES = ("GracefulRestart", "ForceRestart")
# The node kind whose images run after an AC power cycle, where its BMC does not say it is one.
POWER_CYCLED_KIND = NodeKind.SWITCH_TRAY
POWER_CYCLE_RESET_TYPE = "PowerCycle"
# The chassis an NVLink switch tray's BMC lists for its first NVSwitch: NVIDIA's infra controller
# classes a BMC as a switch by it alone (NVIDIA/bare-metal-manager-core@7778162cf43764001b131a939
# fdea586d04b4eeb crates/site-explorer/src/redfish.rs is_switch, crates/api-model/src/
# site_explorer/mod.rs is_switch); its mock of an N5200_LD tray serves MGX_NVSwitch_0 and _1,
# Model N5200_LD (crates/bmc-mock/src/hw/nvidia_switch_nd5200_ld.rs).
NVLINK_SWITCH_CHASSIS = "MGX_NVSwitch_0"


def rule_for(client: RedfishClient, kind: str, node_kind: str = "") -> Activation:
    """How `kind`'s (bmc, bios, hgx) new image is made to run on this BMC's platform, for a
    node enrolled as `node_kind`."""
    if node_kind == POWER_CYCLED_KIND:
        return Activation.POWER_CYCLE
    if aux_power_target(client) is not None:
        return Activation.AUX_POWER_RESET
    if kind == "bmc" and quirks.vendor_of(client.root(), client.manufacturer()) == "lenovo":
        return Activation.MANAGER_RESET
    # Last: it costs a GET of the Chassis collection, which each look of an XCC's manager
    # reset would otherwise pay.
    if is_nvlink_switch_tray(client):
        return Activation.POWER_CYCLE
    return Activation.HOST_RESET


def activate(client: RedfishClient, how: Activation) -> Staged | None:
    """Send what makes the image run; None for HOST_RESET, which the caller does its own way
    (a reboot into the environment it wants next)."""
    if how is Activation.AUX_POWER_RESET:
        target = aux_power_target(client)
        if target is None:
            raise errors.ActionNotSupported(
                client.transport.absolute(AUX_POWER_CHASSIS), "no NvidiaChassis.AuxPowerReset"
            )
        answer = client.transport.request("POST", target, json={"ResetType": AUX_POWER_RESET_TYPE})
        return _staged(f"activate:{AUX_POWER_RESET_TYPE}", answer)
    if how is Activation.POWER_CYCLE:
        url = client.transport.absolute(client.system_path())
        allowed = client.allowed_reset_types()
        if POWER_CYCLE_RESET_TYPE not in allowed:
            raise errors.ActionNotSupported(url, f"no PowerCycle among the allowed {allowed}")
        target = (client.system()["Actions"]["#ComputerSystem.Reset"]).get("target")
        if not target:
            raise errors.ActionNotSupported(url, "the Reset action has no target")
        body = {"ResetType": POWER_CYCLE_RESET_TYPE}
        return _staged("activate:PowerCycle", client.transport.request("POST", target, json=body))
    if how is Activation.MANAGER_RESET:
        target, reset_type = _manager_reset(client)
        answer = client.transport.request("POST", target, json={"ResetType": reset_type})
        return _staged(f"activate:manager:{reset_type}", answer)
    return None


def is_nvlink_switch_tray(client: RedfishClient) -> bool:
    """Whether the BMC is an NVLink switch tray's: its Chassis collection lists
    NVLINK_SWITCH_CHASSIS (the system's own Links.Chassis names another, BMC_eeprom)."""
    root = client.root()
    if "Chassis" not in root:
        return False
    collection = client.link(root, "Chassis", url=SERVICE_ROOT)
    ids = {path.rstrip("/").rsplit("/", 1)[-1].lower() for path in client.members(collection)}
    return NVLINK_SWITCH_CHASSIS.lower() in ids


def sign_of_reset(client: RedfishClient, power_before: str, since: timedelta) -> str | None:
    """What shows that the system or its BMC was reset within `since` (real time), or None.

    Read where an activation's answer was lost: the host's power no longer what it was before
    the request (an aux power cycle leaves it off, an AC cycle takes it down, a BMC that cannot
    say is restarting), or the manager's LastResetTime (Manager v1_9_0) within `since` by its
    own DateTime, one clock, so no skew against ours (nvidia-gb200 Managers/BMC_0 reports
    both; a BMC that reports neither gives no sign this way). Raises BmcUnreachable or BmcBusy
    where the BMC does not answer, itself a sign the caller reads.
    """
    power = client.power_state()
    if power_before and power != power_before:
        return f"its power reads {power}, {power_before} before"
    manager = client.get(client.manager_path())
    age = reset_age(manager)
    if age is not None and age <= since:
        return f"its manager's LastResetTime is {manager.get('LastResetTime')}"
    return None


def reset_age(manager: dict[str, Any]) -> timedelta | None:
    """How long before the manager's own DateTime it was last reset, where it reports both."""
    try:
        now = datetime.fromisoformat(str(manager["DateTime"]))
        reset = datetime.fromisoformat(str(manager["LastResetTime"]))
    except (KeyError, ValueError):
        return None
    if now.tzinfo is None or reset.tzinfo is None or reset.year < 2000:
        return None  # an unset clock (OpenBMC's 1970) says nothing about when it reset
    return now - reset


def aux_power_target(client: RedfishClient) -> str | None:
    """The AuxPowerReset action's target where the platform offers it, else None."""
    bodies: list[dict[str, Any]] = []
    chassis = client.chassis()
    if chassis is not None:
        bodies.append(chassis)
    if chassis is None or not _same(chassis.get("@odata.id"), AUX_POWER_CHASSIS):
        try:
            bodies.append(client.get(AUX_POWER_CHASSIS))
        except errors.ResourceMissing:
            pass
    for body in bodies:
        action = ((body.get("Actions") or {}).get("Oem") or {}).get(AUX_POWER_ACTION) or {}
        if action.get("target"):
            return str(action["target"])
    return None


def _manager_reset(client: RedfishClient) -> tuple[str, str]:
    path = client.manager_path()
    action = (client.get(path).get("Actions") or {}).get("#Manager.Reset") or {}
    if not action.get("target"):
        raise errors.ActionNotSupported(client.transport.absolute(path), "no Manager.Reset")
    allowed = action.get("ResetType@Redfish.AllowableValues") or list(MANAGER_RESET_TYPES)
    choice = next((t for t in MANAGER_RESET_TYPES if t in allowed), allowed[0])
    return str(action["target"]), str(choice)


def _same(a: Any, b: str) -> bool:
    return isinstance(a, str) and a.rstrip("/").lower() == b.rstrip("/").lower()


def _staged(action: str, answer: Any) -> Staged:
    return Staged(action=action, url=answer.url, status=answer.status, detail=answer.body or {})
