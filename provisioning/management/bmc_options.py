"""The BMC address, credential and TLS options every Redfish command takes, and the client they make.

`redfish_probe` and `redfish_act` share them so that a site tech who can probe a BMC can act on it
with the same words.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from django.core.management.base import CommandError, CommandParser

from ..redfish import RedfishClient
from ..redfish.tls import fetch_fingerprint

PASSWORD_ENV = "GREENLIGHT_BMC_PASSWORD"


def add_bmc_arguments(parser: CommandParser) -> None:
    """The BMC URL, --username, --password, --fingerprint | --insecure, --plain-http, --timeout."""
    parser.add_argument("url", help="BMC address, e.g. https://10.0.0.5")
    parser.add_argument("--username", required=True)
    parser.add_argument(
        "--password",
        default=None,
        help=f"BMC password (or set {PASSWORD_ENV}, which keeps it out of the process list); "
        "one that starts with '-' must be written --password=VALUE",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--fingerprint",
        default=None,
        help="SHA-256 fingerprint the BMC's certificate must have",
    )
    group.add_argument(
        "--insecure",
        action="store_true",
        help=(
            "Accept whatever certificate the BMC presents, for this command only, and print its "
            "SHA-256 fingerprint so an operator can check it and pin it at enrollment. "
            "Verification is not switched off silently: the fingerprint is in the output."
        ),
    )
    parser.add_argument(
        "--plain-http",
        action="store_true",
        help="Allow an http:// BMC for this command (refused otherwise): the password then "
        "crosses the network unencrypted.",
    )
    parser.add_argument("--timeout", type=float, default=10.0)


@dataclass(frozen=True)
class BmcTarget:
    """One BMC as the options name it: address, credentials and the certificate pin to use."""

    url: str
    username: str
    password: str
    fingerprint: str | None
    timeout: float
    plain_http: bool

    def client(self, **kw: Any) -> RedfishClient:
        """A RedfishClient for this BMC (not yet opened); `kw` adds client options (dry_run)."""
        return RedfishClient(
            self.url,
            self.username,
            self.password,
            fingerprint=self.fingerprint,
            timeout=self.timeout,
            allow_plain_http=self.plain_http,
            **kw,
        )


def bmc_target(options: dict[str, Any]) -> BmcTarget:
    """The BMC the options name. With --insecure the certificate is fetched and pinned here, so
    every later request is checked against what the output prints; that fetch may raise a
    RedfishError or ValueError, which the command reports."""
    url = options["url"]
    password = options["password"] or os.environ.get(PASSWORD_ENV)
    if password is None:
        raise CommandError(f"give --password or set {PASSWORD_ENV}")
    fingerprint = options["fingerprint"]
    if options["insecure"] and url.startswith("https://"):
        fingerprint = fetch_fingerprint(url, timeout=options["timeout"])
    return BmcTarget(
        url=url,
        username=options["username"],
        password=password,
        fingerprint=fingerprint,
        timeout=options["timeout"],
        plain_http=options["plain_http"],
    )
