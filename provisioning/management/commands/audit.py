"""`manage.py audit [--rack R | --node SERIAL]`: drift against the manifest, without touching nodes."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from fleet.models import Node

from ...core.audit import audit_node


class Command(BaseCommand):
    help = "Report per component matched or drifted against the manifest; writes nothing to nodes."

    def add_arguments(self, parser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--rack", help="rack name (every node in it)")
        which.add_argument("--node", help="node serial")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def handle(self, *args, **options) -> None:
        nodes = Node.objects.select_related("sku", "manifest")
        if options["node"]:
            nodes = nodes.filter(serial=options["node"])
        else:
            nodes = nodes.filter(rack__name=options["rack"]).order_by("position")
        if not nodes:
            raise CommandError("no such node or rack")
        reports = []
        for node in nodes:
            try:
                reports.append(audit_node(node).as_dict())
            except ValueError as exc:
                reports.append({"node": node.serial, "error": str(exc)})
        if options["json"]:
            self.stdout.write(json.dumps(reports, indent=2))
            return
        for report in reports:
            if "error" in report:
                self.stdout.write(f"{report['node']}: {report['error']}")
                continue
            self.stdout.write(
                f"{report['node']} against {report['manifest']}: "
                f"{report['matched']} matched, {report['drifted']} drifted"
            )
            for c in report["components"]:
                mark = "ok   " if c["matched"] else "DRIFT"
                self.stdout.write(
                    f"  {mark} {c['component']}: expected {c['expected']}, found {c['actual']}"
                )
            for phase, reason in report["unreadable"].items():
                self.stdout.write(f"  ?     {phase}: cannot read: {reason}")
