"""Building a Redfish client for a node from what Greenlight stores about its BMC."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .redfish import RedfishClient

if TYPE_CHECKING:
    from fleet.models import Node


def client_for(node: Node) -> RedfishClient:
    """A client for the node's BMC, pinned to the certificate recorded at enrollment."""
    return RedfishClient(
        node.bmc_address,
        node.bmc_username,
        node.bmc_password,
        fingerprint=node.bmc_cert_fingerprint or None,
    )
