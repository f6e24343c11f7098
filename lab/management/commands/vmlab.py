"""`manage.py vmlab`: provision real QEMU VMs over real Redfish through Greenlight's pipeline."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from lab.vm.packages import (
    install_packages,
    missing_packages,
    missing_python_modules,
)
from lab.vm.run import VmLabConfig, VmLabRun
from lab.vm.tier import TierUnavailable


class Command(BaseCommand):
    help = (
        "The VM tier: build or reuse the boot image, start libvirt, N VMs and their Redfish "
        "emulators, enroll them, run the pipeline (twice by default) and write a JSON summary."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--nodes", type=int, default=2)
        parser.add_argument("--passes", type=int, default=2, help="2 shows the idempotent re-run")
        parser.add_argument("--workdir", default="var/vmlab", help="image, VMs, logs")
        parser.add_argument("--agent-api-port", type=int, default=18443)
        parser.add_argument("--timeout", type=float, default=900.0, help="real seconds per pass")
        parser.add_argument("--json", default="var/vmlab/summary.json", help="summary path")
        parser.add_argument(
            "--install", action="store_true", help="apt-get install missing packages first"
        )
        parser.add_argument(
            "--check", action="store_true", help="only say what is missing, then exit"
        )

    def handle(self, *args, **options) -> None:
        missing = missing_packages()
        python_missing = missing_python_modules()
        if options["check"]:
            self.stdout.write(json.dumps({"apt": missing, "python": python_missing}))
            return
        if python_missing:
            raise CommandError(
                f"missing Python packages {python_missing}: pip install -r requirements-dev.txt"
            )
        if missing:
            if not options["install"]:
                raise CommandError(f"missing Debian packages {missing}: run with --install")
            install_packages(missing)
        call_command("migrate", verbosity=0)
        config = VmLabConfig(
            nodes=options["nodes"],
            workdir=Path(options["workdir"]),
            agent_api_port=options["agent_api_port"],
            timeout_s=options["timeout"],
        )
        passes = []
        try:
            with VmLabRun(config) as lab:
                self.stdout.write(f"up: {json.dumps(lab.timings)}")
                for index in range(options["passes"]):
                    self.stdout.write(f"pass {index + 1}: {config.nodes} VMs ...")
                    self.stdout.flush()
                    result = lab.run_pass()
                    passes.append(result)
                    states = [n["final_state"] for n in result["nodes"]]
                    self.stdout.write(f"pass {index + 1}: {states} in {result['seconds']} s")
                timings = lab.timings
        except TierUnavailable as exc:
            raise CommandError(str(exc)) from exc
        path = Path(options["json"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"setup": timings, "passes": passes}, indent=2))
        self.stdout.write(f"summary written to {path}")
        if not all(p["finished"] for p in passes):
            raise CommandError("some runs did not settle in time; see the summary")
