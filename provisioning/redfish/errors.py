"""Typed Redfish errors: each names the URL and the reason, and never carries a credential."""

from __future__ import annotations


class RedfishError(Exception):
    """Base of every error the Redfish client raises; `url` and `reason` are always set."""

    #: Whether the engine may try the same request again later (a busy BMC, a dropped link).
    transient = False

    def __init__(self, url: str, reason: str, *, status: int | None = None) -> None:
        self.url = url
        self.reason = reason
        self.status = status
        super().__init__(f"{reason} [{url}]")


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
    """The resource changed since it was read (412 on If-Match)."""


class RequestRejected(RedfishError):
    """The BMC rejected the request itself (400 and other 4xx), with its own message."""


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
