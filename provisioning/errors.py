"""Sorting errors that escape a phase into outcomes: a hiccup is transient, the rest fail."""

from __future__ import annotations

import logging

import httpx
from django.db import OperationalError

from .outcomes import Failure, Outcome, TransientFailure
from .redfish import errors as rf

logger = logging.getLogger(__name__)


class AgentUnavailable(Exception):
    """The node's agent did not answer (it may be rebooting)."""


class AgentRefused(Exception):
    """The agent answered but refused or failed a request."""


# A locked or dropped database connection is contention, not a fault of the node.
TRANSIENT = (
    rf.BmcBusy,
    rf.BmcUnreachable,
    rf.BmcNotReady,
    rf.SystemInPost,
    httpx.TransportError,
    AgentUnavailable,
    OperationalError,
)
# Errors that retrying cannot fix: wrong credentials, a certificate that is not the pinned one,
# a licence-gated feature. They fail the run at once, naming the BMC.
PERMANENT = (
    rf.AuthenticationRefused,
    rf.CertificateMismatch,
    rf.CertificateUntrusted,
    rf.ConfigurationError,
)


def classify(exc: Exception) -> Outcome:
    """The outcome an exception stands for."""
    if isinstance(exc, TRANSIENT):
        component = "bmc" if isinstance(exc, rf.RedfishError) else ""
        if isinstance(exc, AgentUnavailable):
            component = "agent"
        return TransientFailure(str(exc), kind=type(exc).__name__, component=component)
    if isinstance(exc, PERMANENT):
        return Failure(f"BMC: {exc}", component="bmc", permanent=True)
    if isinstance(exc, rf.RedfishError):
        return Failure(f"BMC: {exc}", component="bmc")
    logger.exception("phase raised an unexpected error")
    return Failure(f"internal error: {type(exc).__name__}: {exc}")
