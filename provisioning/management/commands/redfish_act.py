"""`manage.py redfish_act URL ACT ...`: one write to one BMC, done and verified, or dry-run."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from fleet.choices import ComponentKind

from ...redfish import PowerAction, RedfishClient, RedfishError
from ...redfish.models import as_dict
from .. import redfish_acts
from ..bmc_options import add_bmc_arguments, bmc_target

# The acts, with the operands each takes: (fewest, most); None is "any number".
ACTS: dict[str, tuple[int, int | None]] = {
    "boot-once": (1, 1),
    "insert-media": (1, 1),
    "eject-media": (0, 0),
    "update-firmware": (1, 1),
    "set-bios": (1, None),
    "power": (1, 1),
}
FIRMWARE_KINDS = [ComponentKind.BMC, ComponentKind.BIOS, ComponentKind.HGX]


class Command(BaseCommand):
    help = (
        "Do one thing to one BMC over Redfish, as the pipeline does it, read it back and print "
        "what was seen as JSON. Acts: boot-once TARGET (Pxe, Cd, Hdd...; then powers on or "
        "restarts unless --no-reset), insert-media URL, eject-media, update-firmware URI|FILE "
        "[--component bmc|bios|hgx], set-bios NAME=VALUE... (VALUE as JSON when it parses), "
        "power on|off|graceful-off|restart|graceful-restart. --dry-run prints the requests the "
        "act would send (method, path, headers and body, secrets masked) and sends none."
    )

    def add_arguments(self, parser) -> None:
        add_bmc_arguments(parser)
        parser.add_argument("act", choices=sorted(ACTS))
        parser.add_argument("operands", nargs="*", help="what the act needs (see above)")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Read what the act needs, print the writes it would send, send none.",
        )
        parser.add_argument(
            "--no-reset", action="store_true", help="boot-once: stage the override only"
        )
        parser.add_argument(
            "--component",
            choices=[kind.value for kind in FIRMWARE_KINDS],
            default=ComponentKind.BMC.value,
            help="update-firmware: which component's running inventory entries are the targets",
        )
        parser.add_argument(
            "--wait",
            type=float,
            default=600.0,
            help="update-firmware, power: seconds to follow the act before giving up",
        )
        parser.add_argument("--interval", type=float, default=5.0, help="seconds between looks")

    def handle(self, *args, **options) -> None:
        act, operands = options["act"], options["operands"]
        fewest, most = ACTS[act]
        if len(operands) < fewest or (most is not None and len(operands) > most):
            raise CommandError(f"{act} takes {_count(fewest, most)}, not {operands}")
        dry_run = options["dry_run"]
        try:
            target = bmc_target(options)
            with target.client(dry_run=dry_run) as client:
                seen = self._act(client, act, operands, options, read_back=not dry_run)
                recorded = getattr(client.transport, "recorded", [])
        except (RedfishError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if dry_run:
            self.stdout.write(json.dumps(as_dict(recorded), indent=2))
        else:
            self.stdout.write(json.dumps({"url": target.url, "act": act, **seen}, indent=2))

    def _act(
        self,
        client: RedfishClient,
        act: str,
        operands: list[str],
        options: dict[str, Any],
        *,
        read_back: bool,
    ) -> dict[str, Any]:
        if act == "boot-once":
            return redfish_acts.boot_once(
                client,
                operands[0],
                reset=not options["no_reset"] and read_back,
                read_back=read_back,
            )
        if act == "insert-media":
            return redfish_acts.insert_media(client, operands[0], read_back=read_back)
        if act == "eject-media":
            return redfish_acts.eject_media(client, read_back=read_back)
        if act == "set-bios":
            return redfish_acts.set_bios(client, parse_settings(operands), read_back=read_back)
        if act == "power":
            return redfish_acts.power(
                client,
                parse_power(operands[0]),
                read_back=read_back,
                wait=options["wait"],
                interval=options["interval"],
            )
        return redfish_acts.update_firmware(
            client,
            operands[0],
            component=options["component"],
            read_back=read_back,
            wait=options["wait"],
            interval=options["interval"],
            report=lambda look: self.stderr.write(json.dumps(look)),
        )


def parse_settings(operands: list[str]) -> dict[str, Any]:
    """NAME=VALUE pairs; a VALUE that parses as JSON is that JSON (1, true, "1"), else a string."""
    changes: dict[str, Any] = {}
    for operand in operands:
        name, equals, raw = operand.partition("=")
        if not equals or not name:
            raise CommandError(f"set-bios takes NAME=VALUE pairs, not {operand!r}")
        try:
            changes[name] = json.loads(raw)
        except ValueError:
            changes[name] = raw
    return changes


def parse_power(word: str) -> PowerAction:
    """A power action as written on the command line (graceful-off is graceful_off)."""
    try:
        return PowerAction(word.replace("-", "_"))
    except ValueError:
        words = ", ".join(a.value.replace("_", "-") for a in PowerAction)
        raise CommandError(f"power takes one of {words}, not {word!r}") from None


def _count(fewest: int, most: int | None) -> str:
    if most is None:
        return f"at least {fewest} operand(s)"
    if fewest == most:
        return f"{fewest} operand(s)"
    return f"{fewest} to {most} operands"
