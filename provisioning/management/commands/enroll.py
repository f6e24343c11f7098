"""`manage.py enroll --bmc URL --username U --password P`: discover a node and enroll it."""

from __future__ import annotations

import json
import os

from django.core.management.base import BaseCommand, CommandError

from ...intake.enrollment import EnrollmentError, enroll_node
from ...redfish import RedfishError

PASSWORD_ENV = "GREENLIGHT_BMC_PASSWORD"


class Command(BaseCommand):
    help = (
        "Read serial, model, MACs and firmware inventory from a BMC over Redfish and create or "
        "update the node and its components. An https BMC's certificate is pinned by fingerprint."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--bmc", required=True, help="BMC address, e.g. https://10.0.0.5")
        parser.add_argument("--username", required=True)
        parser.add_argument(
            "--password",
            default=None,
            help=f"BMC password (or set {PASSWORD_ENV}); one that starts with '-' must be "
            "written --password=VALUE",
        )
        parser.add_argument("--rack", default=None, help="rack name, or SITE/RACK")
        parser.add_argument("--position", type=int, default=None, help="lowest U")
        parser.add_argument("--sku", default=None, help="SKU name (required for a new node)")
        parser.add_argument(
            "--fingerprint",
            default=None,
            help="the SHA-256 fingerprint you expect (from redfish_probe --insecure); refused "
            "if the BMC presents another",
        )
        parser.add_argument(
            "--plain-http-reason",
            default="",
            help="an http:// BMC is refused unless you say why it must be reached over plain "
            "HTTP (its password then crosses the network unencrypted); recorded as an event",
        )
        parser.add_argument("--timeout", type=float, default=10.0)
        parser.add_argument(
            "--force",
            action="store_true",
            help="enroll even though the hardware does not match the SKU (needs --reason)",
        )
        parser.add_argument("--reason", default="", help="why a SKU mismatch is forced")

    def handle(self, *args, **options) -> None:
        password = options["password"] or os.environ.get(PASSWORD_ENV)
        if password is None:
            raise CommandError(f"give --password or set {PASSWORD_ENV}")
        try:
            result = enroll_node(
                options["bmc"],
                options["username"],
                password,
                sku=options["sku"],
                rack=options["rack"],
                position=options["position"],
                fingerprint=options["fingerprint"],
                actor_label="enroll command",
                timeout=options["timeout"],
                plain_http_reason=options["plain_http_reason"],
                force=options["force"],
                reason=options["reason"],
            )
        except (EnrollmentError, RedfishError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        node = result.node
        summary = {
            "serial": node.serial,
            "created": result.created,
            "changed": result.changed,
            "components": result.components,
            "macs": node.mac_addresses,
            "cert_fingerprint": node.bmc_cert_fingerprint,
            "unsupported": result.unsupported,
            "sku_differences": result.sku_differences,
        }
        self.stdout.write(json.dumps(summary, indent=2))
