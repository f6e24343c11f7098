"""`manage.py lab <subcommand>`: run the simulated hall. Subcommands are argparse subparsers,
each a small method, so adding one (e.g. `run`) is a parser and a handler."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from lab.bmc.flavours import FLAVOURS
from lab.fault_mix import MIXES
from lab.faults import CATALOG, parse_fault
from lab.hall import LabHall
from lab.rack_documents import SHAPES as RACK_SHAPES
from lab.rack_run import LabRackConfig, LabRackRun
from lab.run import LabRun, LabRunConfig
from lab.site import LabSite

DEFAULT_INVENTORY = Path("var/lab/inventory.json")


def parse_faults(specs: list[str]) -> dict[int, list[str]]:
    """`INDEX=name[:param]` options into {index: [spec, ...]}."""
    faults: dict[int, list[str]] = {}
    for spec in specs:
        index, sep, fault = spec.partition("=")
        if not sep or not index.isdigit():
            raise CommandError(f"--fault wants INDEX=name[:param], got {spec!r}")
        try:
            parse_fault(fault)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        faults.setdefault(int(index), []).append(fault)
    return faults


class Command(BaseCommand):
    help = "The simulated hall: Redfish BMCs (and later agents) on loopback addresses."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True)
        serve = sub.add_parser("serve", help="serve the hall's BMCs until interrupted")
        serve.add_argument("--nodes", type=int, default=4)
        serve.add_argument(
            "--flavours",
            default="dell,hpe,supermicro",
            help=f"comma-separated, assigned round-robin; known: {', '.join(FLAVOURS)}",
        )
        serve.add_argument("--speed", type=float, default=1.0, help="lab seconds per real second")
        serve.add_argument("--seed", type=int, default=0, help="serials, MACs and fault dice")
        serve.add_argument(
            "--inventory",
            default=str(DEFAULT_INVENTORY),
            help="where to write the inventory JSON (BMC URLs, credentials, fingerprints)",
        )
        serve.add_argument(
            "--greenlight",
            help="Greenlight's URL: with it, each node also runs the agent, which checks in there",
        )
        serve.add_argument(
            "--artifact-port",
            type=int,
            default=0,
            help="port of the lab's firmware and OS image server on 127.0.0.1 (0: any)",
        )
        serve.add_argument(
            "--fault",
            action="append",
            default=[],
            metavar="INDEX=NAME[:PARAM]",
            help=f"inject a fault on node INDEX (0-based); known: {', '.join(sorted(CATALOG))}",
        )

        run = sub.add_parser(
            "run", help="provision a lab rack through the real pipeline and write a summary"
        )
        run.add_argument("--nodes", type=int, default=16)
        run.add_argument("--faults", choices=MIXES, default="standard")
        run.add_argument("--seed", type=int, default=0)
        run.add_argument("--speed", type=float, default=300.0, help="lab seconds per real second")
        run.add_argument("--passes", type=int, default=1, help="2 shows the idempotent re-run")
        run.add_argument("--flavour", choices=sorted(FLAVOURS), default="dell")
        run.add_argument("--workers", type=int, default=1, help="Celery worker processes")
        run.add_argument("--soak-hours", type=float, default=1.0, help="burn-in soak, lab hours")
        run.add_argument("--timeout", type=float, default=1800.0, help="real seconds per pass")
        run.add_argument("--json", required=True, help="where to write the summary")
        run.add_argument(
            "--rack-scale",
            choices=sorted(RACK_SHAPES),
            help="bring up a rack-scale system (its members, staged rules, rack-wide gate) "
            "instead of --nodes servers",
        )

    def handle(self, *args, **options) -> None:
        handler = getattr(self, f"handle_{options['subcommand']}")
        handler(**options)

    def handle_run(self, **options) -> None:
        if options["rack_scale"]:
            self.handle_rack_run(**options)
            return
        config = LabRunConfig(
            nodes=options["nodes"],
            faults=options["faults"],
            seed=options["seed"],
            speed=options["speed"],
            passes=options["passes"],
            flavour=options["flavour"],
            workers=options["workers"],
            soak_hours=options["soak_hours"],
            timeout_s=options["timeout"],
        )
        passes = []
        with LabRun(config) as lab:
            for index in range(config.passes):
                self.stdout.write(f"pass {index + 1}: provisioning {config.nodes} nodes ...")
                self.stdout.flush()
                result = lab.run_pass()
                passes.append({"finished": result["finished"], "nodes": result["nodes"]})
                states: dict[str, int] = {}
                for node in result["nodes"]:
                    states[node["final_state"]] = states.get(node["final_state"], 0) + 1
                self.stdout.write(f"pass {index + 1}: {states}")
        path = Path(options["json"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"passes": passes}, indent=2))
        self.stdout.write(f"summary written to {path}")
        if not all(p["finished"] for p in passes):
            raise CommandError("some runs did not finish in time; see the summary")

    def handle_rack_run(self, **options) -> None:
        config = LabRackConfig(
            shape=RACK_SHAPES[options["rack_scale"]],
            seed=options["seed"],
            speed=options["speed"],
            passes=options["passes"],
            workers=options["workers"],
            soak_hours=options["soak_hours"],
            timeout_s=options["timeout"],
        )
        passes = []
        with LabRackRun(config) as lab:
            members = len(config.shape.layout())
            for index in range(config.passes):
                self.stdout.write(f"pass {index + 1}: rack run over {members} members ...")
                self.stdout.flush()
                result = lab.run_pass()
                passes.append(result)
                stages = ", ".join(
                    f"{s['kind']} {s['action']} {s['peak_parallel']}/{s['max_parallel']}"
                    for s in result["stages"]
                )
                self.stdout.write(
                    f"pass {index + 1}: {result['status']}, rack {result['rack_state']} in "
                    f"{result['wall_s']} s; stages (peak/max at once): {stages}"
                )
                if not result["finished"]:
                    break  # the rack run is still open: another would be refused
        path = Path(options["json"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rack_scale": options["rack_scale"], "passes": passes},
                                   indent=2, default=str))  # fmt: skip
        self.stdout.write(f"summary written to {path}")
        if not all(p["finished"] for p in passes):
            raise CommandError("a rack run did not finish in time; see the summary")

    def handle_serve(self, **options) -> None:
        flavours = [f.strip() for f in options["flavours"].split(",") if f.strip()]
        try:
            hall = LabHall(
                options["nodes"],
                flavours=flavours,
                speed=options["speed"],
                seed=options["seed"],
                faults=parse_faults(options["fault"]),
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        if options["greenlight"]:
            context = LabSite(hall, options["greenlight"], artifact_port=options["artifact_port"])
        else:
            context = hall
        with context:
            if options["greenlight"]:
                self.stdout.write(
                    f"agents check in with {options['greenlight']}; "
                    f"artifacts at {context.artifact_url}/artifacts/"
                )
            path = hall.write_inventory(options["inventory"])
            for bmc in hall.bmcs:
                # The URL and fingerprint only: passwords stay in the inventory file (mode 0600).
                self.stdout.write(
                    f"{bmc.node.serial} {bmc.flavour:<10} {bmc.https_url} {bmc.cert_fingerprint}"
                )
            self.stdout.write(f"inventory written to {path} (readable by its owner only)")
            self.stdout.flush()
            try:
                while not stop.wait(0.5):
                    pass
            except KeyboardInterrupt:
                pass
        self.stdout.write("lab stopped")
