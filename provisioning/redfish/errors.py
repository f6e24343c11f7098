"""Typed Redfish errors: each names the URL and the reason, and never carries a credential."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    """One entry of a Redfish error's @Message.ExtendedInfo."""

    message_id: str
    message: str
    args: tuple[str, ...] = ()

    def id_endswith(self, suffix: str) -> bool:
        return self.message_id.lower().endswith(suffix.lower())


class RedfishError(Exception):
    """Base of every error the Redfish client raises; `url` and `reason` are always set."""

    #: Whether the engine may try the same request again later (a busy BMC, a dropped link).
    transient = False

    def __init__(
        self,
        url: str,
        reason: str,
        *,
        status: int | None = None,
        messages: tuple[Message, ...] = (),
    ) -> None:
        self.url = url
        self.reason = reason
        self.status = status
        # The BMC's @Message.ExtendedInfo, scrubbed: what a retry that matches the refusal reads.
        self.messages = messages
        super().__init__(f"{reason} [{url}]")

    def has_message(self, *suffixes: str) -> bool:
        """Whether the BMC's messages carry a MessageId ending in one of `suffixes`
        (registry versions differ: Base.1.5.ActionParameterMissing, Base.1.18.1...)."""
        return any(m.id_endswith(s) for m in self.messages for s in suffixes)


class AuthenticationRefused(RedfishError):
    """The BMC refused the credentials (401), at login or on a request."""


class ResourceMissing(RedfishError):
    """A link led nowhere (404), or a resource the client needs is not offered at all."""


class ActionNotSupported(RedfishError):
    """The BMC does not offer this action or value (absent from the resource, 405 or 501)."""


class ConfigurationError(RedfishError):
    """The BMC refuses for a reason a person must fix (a licence-gated feature, 403).

    Not retried: asking again gets the same answer.
    """


class PreconditionFailed(RedfishError):
    """The resource changed since it was read (412 on If-Match), or the BMC refused the ETag's
    form (iLO, AMI and XCC take only strong ETags)."""


class PreconditionRequired(RedfishError):
    """The BMC takes this write only with If-Match (428: Lenovo XCC)."""


class RequestRejected(RedfishError):
    """The BMC rejected the request itself (400 and other 4xx), with its own message."""


class SystemInPost(RequestRejected):
    """The BMC refuses changes while the host is in POST (HPE iLO right after power-on):
    the same request succeeds once POST is over."""

    transient = True


class BmcNotReady(RequestRejected):
    """The BMC is still busy with a previous operation (iDRAC SYS518, iLO
    InvalidOperationForSystemState): sushy's connector retries these, and so does the engine."""

    transient = True


class PendingJob(RequestRejected):
    """Dell iDRAC: a configuration job is already pending or running (LC068, RAC0679,
    SYS011); the request can succeed once that job is done or the queue is cleared."""


class NotJson(RedfishError):
    """The BMC answered something that is not JSON (an HTML login page, a proxy error)."""


class InvalidJson(RedfishError):
    """The BMC answered with a JSON content type but a body that does not parse."""


class MissingOdataId(RedfishError):
    """A resource or a link lacks the @odata.id every Redfish resource must carry."""


class CertificateMismatch(RedfishError):
    """The BMC presented a certificate whose fingerprint is not the pinned one."""


class CertificateUntrusted(RedfishError):
    """The BMC's certificate does not verify and nothing is pinned for it."""


class BmcBusy(RedfishError):
    """The BMC kept answering 503 after the bounded retries."""

    transient = True


class BmcUnreachable(RedfishError):
    """The BMC could not be reached, dropped the connection or timed out."""

    transient = True


class BmcError(RedfishError):
    """The BMC failed on its side (5xx other than 503)."""

    transient = True
