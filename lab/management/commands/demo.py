"""`make demo`: migrate, create the admin user, load the samples, start every process, wait.

Each child runs in its own process group, so Ctrl-C reaches only this command, which then stops
every child (and its children) in order. Running it again reuses the database and the user.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from acceptance.sample_data import DEMO_RACK, DEMO_SITE, SKU_NAME, load_samples
from common.embedded_redis import stop_embedded_redis
from fleet.lifecycle import RUN_STARTABLE_STATES
from fleet.models import Node, Rack, Sku
from fleet.roles import FLEET_ADMIN
from lab.fault_mix import announce, demo_plan, fault_options, is_hardware
from provisioning.core.runs import start_runs
from provisioning.intake.enrollment import EnrollmentError, enroll_node, repin_bmc_certificate
from provisioning.redfish import RedfishError
from provisioning.redfish.tls import normalize_fingerprint

from ... import processes

ROOT = Path(settings.BASE_DIR)
ADMIN_USERNAME = "admin"
LAB_NODES = 8
# The sample manifest's firmware and OS image URLs point at the lab's artifact server here.
ARTIFACT_PORT = 8099
# Lab seconds per real second, for the lab and Greenlight alike: provisioning takes seconds
# and the 72-hour burn-in soak about seven minutes.
DEMO_TIME_SCALE = 600.0


@dataclass
class Child:
    name: str
    proc: subprocess.Popen
    log: Path


class Command(BaseCommand):
    help = "Run the demo: web server, Celery worker and beat, and a lab rack. Ctrl-C stops it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
        parser.add_argument("--no-lab", action="store_true", help="Do not start a lab rack.")

    def handle(self, *args, port: int, no_lab: bool, **options) -> None:
        self.children: list[Child] = []
        self.seeded: list[str] = []  # the lab rack's seeded faults, in words, for the banner
        self.speed = float(os.environ.get("GREENLIGHT_TIME_SCALE") or DEMO_TIME_SCALE)
        self.stopping = False
        self.log_dir = Path(settings.VAR_DIR) / "log"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        owns_redis = self._started_embedded_redis()

        self.say("Migrating the database")
        call_command("migrate", interactive=False, verbosity=0)
        password = self._ensure_admin()
        report = load_samples()
        self.say(f"Samples: {len(report.created)} created, {len(report.existing)} already there")

        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            self._start_all(port, no_lab)
            self._print_banner(port, password)
            self._watch()
        finally:
            self._stop_all()
            if owns_redis:
                stop_embedded_redis(Path(settings.VAR_DIR))
                self.say("Stopped the embedded Redis")
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.say("Demo stopped")

    # --- set-up ---------------------------------------------------------------------------------

    def say(self, message: str) -> None:
        self.stdout.write(f"[demo] {message}")
        self.stdout.flush()

    def _started_embedded_redis(self) -> bool:
        """True if the embedded Redis was started by this process (manage.py starts it)."""
        if os.environ.get("REDIS_URL"):
            return False
        pid_file = Path(settings.VAR_DIR) / "redis.pid"
        try:
            redis_started = psutil.Process(int(pid_file.read_text().strip())).create_time()
        except (OSError, ValueError, psutil.Error):
            return False
        return redis_started >= psutil.Process().create_time()

    def _ensure_admin(self) -> str | None:
        """Create the admin user with a random password, returned once; None if it exists."""
        User = get_user_model()
        if User.objects.filter(username=ADMIN_USERNAME).exists():
            self.say(
                f"User {ADMIN_USERNAME!r} exists; its password was printed when it was created. "
                f"Reset it with: {sys.executable} manage.py changepassword {ADMIN_USERNAME}"
            )
            return None
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(ADMIN_USERNAME, "", password)
        user.groups.add(Group.objects.get(name=FLEET_ADMIN))
        return password

    def _child_env(self) -> dict[str, str]:
        # One database, Redis and queue for everyone: children must not each decide for
        # themselves; Greenlight's clock runs at the lab's pace, so phase limits are lab minutes.
        return processes.child_env(GREENLIGHT_TIME_SCALE=str(self.speed))

    def _started(self, name: str, start: Callable[[IO[bytes]], subprocess.Popen]) -> Child:
        """Start a child through lab.processes with its output appended to its own log."""
        log = self.log_dir / f"{name}.log"
        with open(log, "ab") as out:
            try:
                proc = start(out)
            except RuntimeError as exc:
                raise CommandError(f"{name}: {exc}; see {_shown(log)}") from None
        child = Child(name, proc, log)
        self.children.append(child)
        self.say(f"Started {name} (pid {proc.pid}), log: {_shown(log)}")
        return child

    def _start_all(self, port: int, no_lab: bool) -> None:
        env = self._child_env()
        self.url = f"http://127.0.0.1:{port}"
        self._started(
            "worker", lambda log: processes.start_worker(env, concurrency=16, name="demo", log=log)
        )
        schedule = Path(settings.VAR_DIR) / "celerybeat-schedule"
        self._started("beat", lambda log: processes.start_beat(env, schedule, log=log))
        if _port_taken(port):
            raise CommandError(f"port {port} is in use: stop what holds it, or set PORT")
        self._started("web", lambda log: processes.start_web(env, port=port, log=log)[0])
        if no_lab:
            self.say("Lab rack: not started (--no-lab)")
        else:
            self._start_lab()

    def _start_lab(self) -> None:
        """Start a lab rack of simulated BMCs in its own process and enroll it over Redfish."""
        if "lab" not in get_commands():
            self.say("Lab rack: not available (this checkout has no `manage.py lab` command)")
            return
        help_text = subprocess.run(
            [sys.executable, "manage.py", "lab", "serve", "--help"],
            cwd=ROOT,
            env=self._child_env(),
            capture_output=True,
            text=True,
        )
        if help_text.returncode != 0 or "--inventory" not in help_text.stdout:
            self.say("Lab rack: not available (`manage.py lab serve --inventory` is missing)")
            return
        # The inventory holds the lab BMCs' passwords: it is written mode 0600 under var/.
        inventory = Path(settings.VAR_DIR) / "lab" / "demo-inventory.json"
        inventory.unlink(missing_ok=True)
        serve = ["lab", "serve", "--nodes", str(LAB_NODES), "--speed", str(self.speed),
                 "--inventory", str(inventory), "--greenlight", self.url,
                 "--artifact-port", str(ARTIFACT_PORT),
                 *fault_options(demo_plan(LAB_NODES))]  # fmt: skip
        lab = self._started(
            "lab", lambda log: processes.start_command(serve, self._child_env(), log)
        )
        deadline = time.monotonic() + 60
        while not inventory.exists() or not inventory.stat().st_size:
            if lab.proc.poll() is not None or time.monotonic() > deadline:
                self.say(f"Lab rack: did not start; see {_shown(lab.log)}")
                return
            time.sleep(0.2)
        enrolled, problems = enroll_lab_inventory(inventory)
        self.say(
            f"Lab rack: {enrolled} of {LAB_NODES} simulated nodes enrolled in "
            f"{DEMO_SITE}/{DEMO_RACK} (lab time x{self.speed:g})"
        )
        for problem in problems:
            self.say(f"  {problem}")
        self.seeded = seeded_faults(json.loads(inventory.read_text()))
        for line in self.seeded:
            self.say(f"Lab rack: {line}")
        started = start_demo_runs()
        self.say(f"Provisioning: {started} run(s) started; watch the rack go green")

    def _print_banner(self, port: int, password: str | None) -> None:
        url = f"http://127.0.0.1:{port}/"
        redis = "embedded" if not os.environ.get("REDIS_URL") else settings.REDIS_URL
        lines = [
            "",
            f"  Greenlight is running at {url}",
            f"  Admin:        {url}admin/",
            f"  Login:        {ADMIN_USERNAME}",
        ]
        if password is not None:
            lines.append(f"  Password:     {password}   (shown once; it is stored only hashed)")
        else:
            lines.append("  Password:     as printed by the first `make demo`")
        lines += [
            f"  Redis:        {redis}",
            f"  Logs:         {_shown(self.log_dir)}/",
            *(f"  Lab fault:    {line}" for line in self.seeded),
            "  Stop:         Ctrl-C",
            "",
        ]
        self.stdout.write("\n".join(lines))
        self.stdout.flush()

    # --- running and stopping -------------------------------------------------------------------

    def _on_signal(self, signum, frame) -> None:
        self.stopping = True

    def _watch(self) -> None:
        while not self.stopping:
            for child in self.children:
                if child.proc.poll() is not None:
                    self.say(
                        f"{child.name} exited with {child.proc.returncode}; stopping the demo "
                        f"(see {child.log})"
                    )
                    return
            time.sleep(0.3)
        self.say("Stopping")

    def _stop_all(self) -> None:
        # The web server first (no new work), the lab last (runs in flight can still reach it).
        order = {"web": 0, "beat": 1, "worker": 2, "lab": 3}
        for child in sorted(self.children, key=lambda c: order.get(c.name, 9)):
            processes.stop(child.proc)
            self.say(f"Stopped {child.name}")
        self.children = []


def _port_taken(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _shown(path: Path) -> str:
    """A path relative to the checkout when it is inside it, else absolute."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def start_demo_runs() -> int:
    """Start a provisioning run on every demo node that can take one, as a site tech would."""
    # A node refused is already running, say after a quick restart of the demo.
    runs, _refused = start_runs(
        Node.objects.filter(
            rack__site__name=DEMO_SITE, rack__name=DEMO_RACK, state__in=RUN_STARTABLE_STATES
        ).select_related("rack", "sku")
    )
    return len(runs)


def seeded_faults(inventory: dict) -> list[str]:
    """A line for each node of a lab inventory that carries a hardware fault (the lab's truth).

    Positions are those `enroll_lab_inventory` gives: the inventory's order, from U1.
    """
    lines = []
    for position, entry in enumerate(inventory["nodes"], start=1):
        for name, param in (entry.get("faults") or {}).items():
            spec = f"{name}:{param}" if param else name
            if is_hardware(spec):
                lines.append(announce(entry["serial"], position, spec))
    return lines


def enroll_lab_inventory(path: Path) -> tuple[int, list[str]]:
    """Enroll the nodes of a lab inventory into the demo rack, as an operator would.

    Each node is discovered over Redfish (provisioning.intake.enrollment). A restarted lab presents new
    BMC certificates; the inventory, written by the lab itself, is the trusted source of the new
    fingerprint, so the demo re-pins explicitly (an event records it) before enrolling again.
    """
    rack = Rack.objects.get(site__name=DEMO_SITE, name=DEMO_RACK)
    sku = Sku.objects.get(name=SKU_NAME)
    enrolled, problems = 0, []
    for position, entry in enumerate(json.loads(path.read_text())["nodes"], start=1):
        fingerprint = entry.get("cert_fingerprint") or None
        existing = Node.objects.filter(serial=entry["serial"]).first()
        try:
            if (
                existing is not None
                and fingerprint
                and existing.bmc_cert_fingerprint
                and existing.bmc_cert_fingerprint != normalize_fingerprint(fingerprint)
            ):
                repin_bmc_certificate(
                    existing, fingerprint=fingerprint, actor_label="demo (lab restarted)"
                )
            enroll_node(
                entry["bmc_url"],
                entry["username"],
                entry["password"],
                sku=sku,
                rack=rack,
                position=position,
                fingerprint=fingerprint,
                actor_label="demo",
            )
            enrolled += 1
        except (EnrollmentError, RedfishError, ValidationError, IntegrityError) as exc:
            # The message names the node and the problem, never the credentials.
            problems.append(f"{entry['serial']}: {exc}")
    return enrolled, problems
