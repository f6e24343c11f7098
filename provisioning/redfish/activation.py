"""How a component's new firmware image is made to run once the BMC has written it.

Most platforms run it after a host reset (the caller's own reboot). Two do not: an NVIDIA
GB200/GB300 tray keeps reporting the old version, the new one pending, until its aux power is
cycled, and a Lenovo XCC runs a new BMC image only after a manager reset. Each rule is a row of
the vendor quirk table (quirks.QUIRK_TABLE); `rule_for` is the one place that picks among them.
An NVLink switch tray, a rack device, runs a new BMC or BIOS image only after its AC power
cycle, ComputerSystem.Reset PowerCycle (NVIDIA/open-nvfwupd@bacc440e FactoryMode/
TrayFlowFunctions/switch_factory_flow_functions.py; the tray's reset types in NVIDIA/
bare-metal-manager-core crates/component-manager/proto/nvswitch-manager.proto): the node's
enrolled kind says so, since no payload does.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from fleet.choices import NodeKind

from . import errors, quirks
from .models import Staged

if TYPE_CHECKING:
    from .client import RedfishClient


class Activation(enum.StrEnum):
    """What makes a written image run."""

    HOST_RESET = "host_reset"  # the caller reboots the host (every platform without a row)
    MANAGER_RESET = "manager_reset"  # Manager.Reset GracefulRestart (Lenovo XCC, its BMC)
    AUX_POWER_RESET = "aux_power_reset"  # NvidiaChassis.AuxPowerReset (GB200/GB300 trays)
    POWER_CYCLE = "power_cycle"  # ComputerSystem.Reset PowerCycle (NVLink switch trays)


# The GB200 NVL tray's chassis that offers the aux power cycle (capture nvidia-gb200,
# Chassis/BMC_0 Actions.Oem); the host's own Links.Chassis names it on that capture too.
AUX_POWER_CHASSIS = "/redfish/v1/Chassis/BMC_0"
AUX_POWER_ACTION = "#NvidiaChassis.AuxPowerReset"
AUX_POWER_RESET_TYPE = "AuxPowerCycleForce"
MANAGER_RESET_TYPES = ("GracefulRestart", "ForceRestart")
# The node kind whose images run after an AC power cycle.
POWER_CYCLED_KIND = NodeKind.SWITCH_TRAY
POWER_CYCLE_RESET_TYPE = "PowerCycle"


def rule_for(client: RedfishClient, kind: str, node_kind: str = "") -> Activation:
    """How `kind`'s (bmc, bios, hgx) new image is made to run on this BMC's platform, for a
    node enrolled as `node_kind`."""
    if node_kind == POWER_CYCLED_KIND:
        return Activation.POWER_CYCLE
    if aux_power_target(client) is not None:
        return Activation.AUX_POWER_RESET
    if kind == "bmc" and quirks.vendor_of(client.root(), client.manufacturer()) == "lenovo":
        return Activation.MANAGER_RESET
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
