"""`manage.py dcim_sync netbox --url URL --token TOKEN [--dry-run]`: push the inventory to NetBox."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from console.dcim.client import NetBoxClient
from console.dcim.netbox import sync
from console.inventory import inventory_nodes


class Command(BaseCommand):
    help = (
        "Create or update NetBox's sites, racks, device types, devices, interfaces and inventory "
        "items from Greenlight's inventory. Idempotent: a second run writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("target", choices=["netbox"], help="The DCIM system to push to")
        parser.add_argument("--url", default=settings.GREENLIGHT_NETBOX_URL, help="NetBox root URL")
        parser.add_argument(
            "--token",
            default=settings.GREENLIGHT_NETBOX_TOKEN,
            help="API token: nbt_<key>.<secret> (v2, sent as Bearer) or a v1 key",
        )
        parser.add_argument("--dry-run", action="store_true", help="Print changes, write nothing")
        parser.add_argument("--site", help="Only nodes of this Greenlight site")
        parser.add_argument("--manufacturer", default="", help="Manufacturer of the device types")
        parser.add_argument("--insecure", action="store_true", help="Do not verify NetBox's TLS")

    def handle(self, *args, **options):
        if not options["url"] or not options["token"]:
            raise CommandError("--url and --token are needed (or GREENLIGHT_NETBOX_URL/_TOKEN)")
        nodes = inventory_nodes()
        if options["site"]:
            nodes = nodes.filter(rack__site__name=options["site"])
        with NetBoxClient(
            options["url"], options["token"], verify=not options["insecure"]
        ) as client:
            report = sync(
                client,
                dry_run=options["dry_run"],
                nodes=nodes,
                manufacturer=options["manufacturer"],
            )
        for change in report.changes:
            style = self.style.ERROR if change.action == "error" else (lambda s: s)
            self.stdout.write(style(change.line()))
        prefix = "dry run: " if report.dry_run else ""
        self.stdout.write(f"{prefix}{report.summary()}")
        if report.errors:
            raise CommandError(f"{len(report.errors)} object(s) could not be synced; see above")
