"""Which system on a BMC is the node, which manager manages it, and where its identity lives.

A BMC may serve several ComputerSystems: the host and the HGX baseboard behind its HMC
(NVIDIA DGX H100, GH200, GB200), or two nodes of one blade (HPE Cray EX235n). The host is
chosen by what it is, never by where it is listed.
"""

from __future__ import annotations

from typing import Any

# SystemType values of a system that is no host to provision (Redfish ComputerSystem 1.x).
NOT_HOSTS = {"os", "virtual", "virtuallypartitioned", "dpu"}


def is_host(system: dict[str, Any]) -> bool:
    """Whether a ComputerSystem is a host that boots: its type is physical (or unstated) and it
    has boot settings or a BIOS.

    An HGX baseboard behind its HMC is SystemType Physical too (DGX H100, GH200, GB200), but it
    boots nothing: it has no Bios, no boot order and no boot override.
    """
    kind = str(system.get("SystemType") or "Physical").lower()
    if kind in NOT_HOSTS:
        return False
    boot = system.get("Boot") or {}
    # GH200's baseboard carries a Boot object with only the allowable values in it.
    return bool(system.get("Bios")) or any(
        k in boot for k in ("BootSourceOverrideTarget", "BootOrder")
    )


def choose_host(systems: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The path of the host among (path, body) pairs: the only host, else the first host, else
    the first system (a BlueField BMC serves its DPU as its one system)."""
    hosts = [path for path, body in systems if is_host(body)]
    if hosts:
        return hosts[0]
    return systems[0][0] if systems else None


def links(resource: dict[str, Any], name: str) -> list[str]:
    """The @odata.id of each link in resource["Links"][name] (a list or a single link)."""
    value = (resource.get("Links") or {}).get(name)
    if isinstance(value, dict):
        value = [value]
    return [v["@odata.id"] for v in value or [] if isinstance(v, dict) and v.get("@odata.id")]


def same_path(a: str, b: str) -> bool:
    """Whether two Redfish paths name the same resource (iLO links differ in case and slash)."""
    return a.rstrip("/").lower() == b.rstrip("/").lower()


def manager_for(
    system_path: str, system: dict[str, Any], managers: list[tuple[str, dict[str, Any]]]
) -> str | None:
    """The manager of a system: one whose ManagerForServers lists it, else its ManagedBy link
    when that manager is a BMC, else the first manager.

    HPE Cray EX235n lists its four mezzanine MCUs beside the BMC, and the node links to none:
    only ManagerForServers names the BMC.
    """
    for path, body in managers:
        if any(same_path(s, system_path) for s in links(body, "ManagerForServers")):
            return path
    for path in links(system, "ManagedBy"):
        return path
    return managers[0][0] if managers else None


def identity(system: dict[str, Any], chassis: dict[str, Any] | None) -> dict[str, str]:
    """Manufacturer, model and serial of the node: the system's, each falling back to its
    chassis's.

    NVIDIA GH200 and GB200 leave all three off the system; they are on the chassis the
    system links to. HPE iLO and Supermicro carry them on both.
    """
    out = {}
    for field in ("Manufacturer", "Model", "SerialNumber"):
        value = str(system.get(field) or "").strip()
        if not value and chassis:
            value = str(chassis.get(field) or "").strip()
        out[field] = value
    return out
