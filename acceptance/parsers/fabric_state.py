"""A GPU's NVLink fabric facts as `nvidia-smi -q` prints them (its Fabric section), text or XML.

    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 2
        ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278
        Health
            Summary                       : Unhealthy
            Bandwidth                     : Full

Drivers grew the section: 535 prints State and Status only, 550/560 add CliqueId, ClusterUUID
and Health/Bandwidth, 570 the route and access-timeout bits, 580 Summary, Incorrect
Configuration and Partition Assigned. A GPU outside any NVLink fabric says "N/A" throughout.

What a GPU says is kept as it says it; `faults` names what is wrong in it on its own (a rack's
one-clique rule is acceptance.rack_fabric's). A value Greenlight does not know is a fault, not a
pass: a driver that adds a word for "unhealthy" must not slip through.
"""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

COMPLETED = "completed"
SUCCESS = "success"
# Health rows: the text key, the XML tag and the name Greenlight keeps.
HEALTH = (
    ("Summary", "summary", "summary"),
    ("Bandwidth", "bandwidth", "bandwidth"),
    ("Route Recovery in progress", "route_recovery_in_progress", "route_recovery_in_progress"),
    ("Route Unhealthy", "route_unhealthy", "route_unhealthy"),
    ("Access Timeout Recovery", "access_timeout_recovery", "access_timeout_recovery"),
    ("Incorrect Configuration", "incorrect_configuration", "incorrect_configuration"),
    ("Partition Assigned", "partition_assigned", "partition_assigned"),
)
# What a healthy GPU (or a driver that does not report the row) says, lower case.
HEALTHY_WORDS = {"healthy", "full", "false", "no", "none", "not supported", "n/a"}
# Rows that say how a GPU is placed, not whether it is healthy.
INFORMATIONAL = {"partition_assigned"}
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
UNSET = {"", "N/A", "[N/A]"}


def from_text(tree: dict) -> dict[str, Any] | None:
    """The Fabric section of one GPU block of the text report; None where the block has none."""
    section = tree.get("Fabric")
    if not isinstance(section, dict):
        return None
    found = section.get("Health")
    health: dict = found if isinstance(found, dict) else {}
    return _facts(
        section.get("State"),
        section.get("Status"),
        section.get("CliqueId"),
        section.get("ClusterUUID"),
        {name: health.get(key) for key, _, name in HEALTH if key in health},
    )


def from_xml(gpu: Element) -> dict[str, Any] | None:
    """The <fabric> element of one <gpu> of `nvidia-smi -q -x`; None where the GPU has none."""
    section = gpu.find("fabric")
    if section is None:
        return None
    health = section.find("health")
    rows = {}
    if health is not None:
        for _, tag, name in HEALTH:
            element = health.find(tag)
            if element is not None:
                rows[name] = element.text
    return _facts(
        _xml_text(section, "state"),
        _xml_text(section, "status"),
        _xml_text(section, "cliqueId"),
        _xml_text(section, "clusterUuid"),
        rows,
    )


def faults(fabric: dict[str, Any]) -> list[str]:
    """What the GPU's own fabric facts say is wrong: failed registration, unhealthy rows."""
    found = []
    state, status = fabric.get("state"), fabric.get("status")
    if _is(state, COMPLETED) and status is not None and not _is(status, SUCCESS):
        found.append(f"fabric registration completed with status '{status}'")
    for name, value in (fabric.get("health") or {}).items():
        if name in INFORMATIONAL or value is None:
            continue
        if value.strip().lower() not in HEALTHY_WORDS:
            found.append(f"fabric health {name.replace('_', ' ')}: {value}")
    return found


def registered(fabric: dict[str, Any]) -> bool:
    """True when the GPU finished registering with the fabric, successfully."""
    return _is(fabric.get("state"), COMPLETED) and _is(fabric.get("status"), SUCCESS)


def in_a_domain(fabric: dict[str, Any]) -> bool:
    """True when the GPU names a real cluster: an HGX board alone reports an all-zero one."""
    uuid = fabric.get("cluster_uuid")
    return bool(uuid) and uuid != ZERO_UUID


def _facts(
    state: Any, status: Any, clique: Any, cluster: Any, health: dict[str, Any]
) -> dict[str, Any]:
    clique_text = _value(clique)
    return {
        "state": _value(state),
        "status": _value(status),
        "clique_id": int(clique_text) if clique_text and clique_text.isdigit() else clique_text,
        "cluster_uuid": (_value(cluster) or None) and str(_value(cluster)).lower(),
        "health": {name: _value(value) for name, value in health.items()},
    }


def _value(value: Any) -> str | None:
    if not isinstance(value, str) or value.strip() in UNSET:
        return None
    return value.strip()


def _xml_text(element: Element, tag: str) -> str | None:
    found = element.find(tag)
    return found.text if found is not None else None


def _is(value: str | None, word: str) -> bool:
    return (value or "").strip().lower() == word
