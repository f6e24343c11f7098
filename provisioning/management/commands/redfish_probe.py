"""`manage.py redfish_probe URL --username U --password P`: print what the client sees, as JSON."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from ...redfish import RedfishError
from ...redfish.probe import probe
from ..bmc_options import add_bmc_arguments, bmc_target


class Command(BaseCommand):
    help = (
        "Read a BMC over Redfish and print, as JSON, its system id, manufacturer, model, serial, "
        "power state, boot override, BIOS attribute count, firmware inventory (each entry placed: "
        "kind, part, model; copies that do not run listed apart), MACs, GPUs, NICs, DPUs, drives "
        "and every system the BMC serves. A node of a multi-node BMC is addressed by its system: "
        "https://10.0.0.5/redfish/v1/Systems/Node1."
    )

    def add_arguments(self, parser) -> None:
        add_bmc_arguments(parser)

    def handle(self, *args, **options) -> None:
        try:
            target = bmc_target(options)
            with target.client() as client:
                result = probe(client)
        except (RedfishError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        result = {"url": target.url, "cert_fingerprint": target.fingerprint, **result}
        self.stdout.write(json.dumps(result, indent=2))
