"""`manage.py redfish_probe URL --username U --password P`: print what the client sees, as JSON."""

from __future__ import annotations

import json
import os

from django.core.management.base import BaseCommand, CommandError

from provisioning.redfish import RedfishClient, RedfishError
from provisioning.redfish.probe import probe
from provisioning.redfish.tls import fetch_fingerprint

PASSWORD_ENV = "GREENLIGHT_BMC_PASSWORD"


class Command(BaseCommand):
    help = (
        "Read a BMC over Redfish and print, as JSON, its system id, manufacturer, model, serial, "
        "power state, boot override, BIOS attribute count, firmware inventory (each entry placed: "
        "kind, part, model; copies that do not run listed apart), MACs, GPUs, NICs, DPUs, drives "
        "and every system the BMC serves. A node of a multi-node BMC is addressed by its system: "
        "https://10.0.0.5/redfish/v1/Systems/Node1."
    )

    def add_arguments(self, parser) -> None:
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
                "Accept whatever certificate the BMC presents, for this probe only, and print its "
                "SHA-256 fingerprint so an operator can check it and pin it at enrollment. "
                "Verification is not switched off silently: the fingerprint is in the output."
            ),
        )
        parser.add_argument(
            "--plain-http",
            action="store_true",
            help="Allow an http:// BMC for this probe (refused otherwise): the password then "
            "crosses the network unencrypted.",
        )
        parser.add_argument("--timeout", type=float, default=10.0)

    def handle(self, *args, **options) -> None:
        url = options["url"]
        password = options["password"] or os.environ.get(PASSWORD_ENV)
        if password is None:
            raise CommandError(f"give --password or set {PASSWORD_ENV}")
        fingerprint = options["fingerprint"]
        try:
            if options["insecure"] and url.startswith("https://"):
                fingerprint = fetch_fingerprint(url, timeout=options["timeout"])
            with RedfishClient(
                url,
                options["username"],
                password,
                fingerprint=fingerprint,
                timeout=options["timeout"],
                allow_plain_http=options["plain_http"],
            ) as client:
                result = probe(client)
        except RedfishError as exc:
            raise CommandError(str(exc)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        result = {"url": url, "cert_fingerprint": fingerprint, **result}
        self.stdout.write(json.dumps(result, indent=2))
