"""Component integrity: the measurements a BMC collected from a node's parts (SPDM, TPM).

Redfish's ComponentIntegrity resources (DSP0268, schema 1.x) carry what a platform's root of
trust measured of a component (a GPU, a NIC, a CPU's AC-RoT) over SPDM, or a TPM's PCRs as the
BMC read them, and whether the component's identity certificate verified. Greenlight records
them beside the node's own TPM quote: firmware evidence the host OS cannot forge.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from . import errors

if TYPE_CHECKING:
    from .client import RedfishClient


@dataclass(frozen=True)
class Measurement:
    """One measurement: an SPDM measurement block's index, or a TPM PCR."""

    index: int
    algorithm: str
    value: str
    kind: str = ""  # SPDM's MeasurementType (ImmutableROM, MutableFirmware...), or "PCR"


@dataclass(frozen=True)
class IntegrityReport:
    """One ComponentIntegrity resource, read."""

    id: str
    protocol: str  # SPDM or TPM (ComponentIntegrityType)
    protocol_version: str
    target: str  # TargetComponentURI: the part measured
    enabled: bool
    # "Success", "Failed" or "" where the BMC did not say (IdentityAuthentication).
    verification: str
    health: str
    last_updated: str
    summary: str  # SPDM's MeasurementSummary (a hash over the summary measurements)
    measurements: tuple[Measurement, ...]

    @property
    def verification_failed(self) -> bool:
        return self.verification.lower() == "failed"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _measurements(section: dict[str, Any], protocol: str) -> tuple[Measurement, ...]:
    found = []
    for m in (section.get("MeasurementSet") or {}).get("Measurements") or []:
        if not isinstance(m, dict) or not m.get("Measurement"):
            continue
        if protocol == "TPM":
            index, kind = m.get("PCR"), "PCR"
        else:
            index, kind = m.get("MeasurementIndex"), str(m.get("MeasurementType") or "")
        if not isinstance(index, int):
            continue
        found.append(
            Measurement(index, str(m.get("MeasurementHashAlgorithm") or ""), m["Measurement"], kind)
        )
    return tuple(found)


def _verification(section: dict[str, Any]) -> str:
    identity = section.get("IdentityAuthentication") or {}
    # SPDM nests it under the responder; TPM states it directly.
    responder = identity.get("ResponderAuthentication") or {}
    return str(identity.get("VerificationStatus") or responder.get("VerificationStatus") or "")


def read_report(body: dict[str, Any]) -> IntegrityReport:
    """A ComponentIntegrity body as an IntegrityReport (the protocol's own section read)."""
    protocol = str(body.get("ComponentIntegrityType") or "")
    section = body.get(protocol) or body.get("SPDM") or body.get("TPM") or {}
    if not isinstance(section, dict):
        section = {}
    return IntegrityReport(
        id=str(body.get("Id") or body.get("@odata.id") or ""),
        protocol=protocol,
        protocol_version=str(body.get("ComponentIntegrityTypeVersion") or ""),
        target=str(body.get("TargetComponentURI") or ""),
        enabled=body.get("ComponentIntegrityEnabled") is not False,
        verification=_verification(section),
        health=str((body.get("Status") or {}).get("Health") or ""),
        last_updated=str(body.get("LastUpdated") or ""),
        summary=str((section.get("MeasurementSet") or {}).get("MeasurementSummary") or ""),
        measurements=_measurements(section, protocol),
    )


def reports(client: RedfishClient) -> list[IntegrityReport]:
    """Every ComponentIntegrity the BMC serves; empty where its service root links none."""
    root = client.root()
    if "ComponentIntegrity" not in root:
        return []
    path = client.link(root, "ComponentIntegrity", url="/redfish/v1/")
    try:
        members = client.expanded_members(path)
    except errors.ResourceMissing:
        return []
    return [read_report(body) for _, body in members]
