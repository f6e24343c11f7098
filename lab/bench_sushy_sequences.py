"""The scripted Redfish sequence of lab/bench_sushy.py, once through sushy and once through
RedfishClient, and the child process that runs one of them (`python -m lab.bench_sushy_sequences
worker sushy|greenlight`).

Each library runs in a process of its own so that its CPU time and memory are its own; nothing
here counts requests (the parent counts them where they land, at each step boundary).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sushy
from sushy import auth as sushy_auth
from sushy import exceptions as sushy_errors

from provisioning.redfish import errors as gl_errors
from provisioning.redfish import topology, virtual_media
from provisioning.redfish.client import RedfishClient

STEPS = (
    "open",
    "identity_power",
    "boot_override",
    "bios_read",
    "firmware_inventory",
    "virtual_cd",
    "boot_once_pxe",
    "bios_stage",
    "close",
)
# Staged on every BMC that offers BIOS settings; every lab flavour knows this attribute.
BIOS_CHANGE = {"ProcVirtualization": "Enabled"}


@dataclass(frozen=True)
class Target:
    """One BMC as both libraries are given it: sushy a CA file, Greenlight the pinned print."""

    name: str
    url: str
    username: str
    password: str
    ca_file: str
    fingerprint: str


class Steps:
    """Each step's outcome ("ok ...", "absent: ..." where the BMC offers it not, "error: ..."),
    wall and CPU time; `boundary` is told before each step, so requests can be counted per step.
    """

    def __init__(
        self, absent: tuple[type[BaseException], ...], boundary: Callable[[str], None]
    ) -> None:
        self.absent = absent
        self.boundary = boundary
        self.outcomes: dict[str, str] = {}
        self.wall_s: dict[str, float] = {}
        self.cpu_s: dict[str, float] = {}

    def run(self, name: str, act: Callable[[], object]) -> bool:
        self.boundary(name)
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            seen = act()
        except self.absent as exc:
            self.outcomes[name] = f"absent: {type(exc).__name__}: {str(exc)[:160]}"
            return False
        except Exception as exc:  # a measurement: record what failed and go on
            self.outcomes[name] = f"error: {type(exc).__name__}: {str(exc)[:200]}"
            return False
        finally:
            self.wall_s[name] = time.perf_counter() - wall
            self.cpu_s[name] = time.process_time() - cpu
        self.outcomes[name] = f"ok {seen}" if seen is not None else "ok"
        return True


# -- the sequence, once per library --------------------------------------------------------------


def sushy_cd(system: Any) -> str:
    """The virtual CD as Ironic finds it with sushy: the system's VirtualMedia, else a manager's."""
    owners = []
    if "VirtualMedia" in system.json:
        owners.append(system.virtual_media)
    owners += [
        manager.virtual_media for manager in system.managers if "VirtualMedia" in manager.json
    ]
    for collection in owners:
        for media in collection.get_members():
            kinds = {str(getattr(t, "value", t)).upper() for t in media.media_types or []}
            if kinds & {"CD", "DVD"}:
                return media.path
    raise sushy_errors.MissingAttributeError(
        attribute="VirtualMedia (CD/DVD)", resource=system.path
    )


def sushy_sequence(target: Target, boundary: Callable[[str], None]) -> Steps:
    """The sequence through sushy's public API, as Ironic's redfish driver calls it."""
    steps = Steps((sushy_errors.MissingAttributeError, sushy_errors.MissingActionError), boundary)
    box: dict[str, Any] = {}

    def open_() -> None:
        auth = sushy_auth.SessionOrBasicAuth(username=target.username, password=target.password)
        box["auth"] = auth
        box["root"] = sushy.Sushy(target.url, auth=auth, verify=target.ca_file)
        members = box["root"].get_system_collection().get_members()
        # sushy's get_system() refuses a BMC with several systems (DGX serves its HGX baseboard
        # too): the host is chosen here as Greenlight chooses it.
        hosts = [m for m in members if topology.is_host(m.json)] or members
        box["system"] = hosts[0]

    if not steps.run("open", open_):
        return steps
    system = box["system"]
    steps.run(
        "identity_power",
        lambda: f"{system.manufacturer}/{system.model}/{system.serial_number}/{system.power_state}",
    )
    steps.run("boot_override", lambda: f"{system.boot.target}/{system.boot.enabled}")
    steps.run("bios_read", lambda: f"{len(system.bios.attributes)} attributes")
    steps.run("firmware_inventory", lambda: _sushy_firmware(box["root"]))
    steps.run("virtual_cd", lambda: sushy_cd(system))

    def boot_once() -> str:
        system.set_system_boot_options(
            target=sushy.BootSource.PXE, enabled=sushy.BootSourceOverrideEnabled.ONCE
        )
        system.refresh()
        return f"{system.boot.target}/{system.boot.enabled}"

    steps.run("boot_once_pxe", boot_once)
    steps.run("bios_stage", lambda: system.bios.set_attributes(dict(BIOS_CHANGE)))
    steps.run("close", box["auth"].close)
    return steps


def _sushy_firmware(root: Any) -> str:
    items = root.get_update_service().firmware_inventory.get_members()
    versions = [item.version for item in items if item.version]
    return f"{len(items)} entries, {len(versions)} with versions"


def greenlight_sequence(target: Target, boundary: Callable[[str], None]) -> Steps:
    """The sequence through RedfishClient, as the pipeline's phases call it."""
    steps = Steps((gl_errors.ActionNotSupported, gl_errors.ResourceMissing), boundary)
    box: dict[str, Any] = {}

    def open_() -> None:
        box["client"] = RedfishClient(
            target.url, target.username, target.password, fingerprint=target.fingerprint
        )
        box["client"].open()

    if not steps.run("open", open_):
        return steps
    client: RedfishClient = box["client"]

    def identity() -> str:
        box["info"] = info = client.system_info()
        return f"{info.manufacturer}/{info.model}/{info.serial}/{info.power_state.value}"

    steps.run("identity_power", identity)
    # system_info() carries the override: no second read, as sushy's System object has it too.
    steps.run("boot_override", lambda: "{0.target}/{0.enabled}".format(box["info"].boot))
    steps.run("bios_read", lambda: f"{len(client.bios_attributes())} attributes")
    steps.run("firmware_inventory", lambda: _greenlight_firmware(client))
    steps.run("virtual_cd", lambda: virtual_media.find_cd(client))

    def boot_once() -> str:
        client.set_boot_override("Pxe", once=True)
        boot = client.boot_override()
        return f"{boot.target}/{boot.enabled}"

    steps.run("boot_once_pxe", boot_once)
    steps.run("bios_stage", lambda: client.set_bios_attributes(dict(BIOS_CHANGE)).status)
    steps.run("close", client.close)
    return steps


def _greenlight_firmware(client: RedfishClient) -> str:
    items = client.firmware_inventory()
    versions = [item.version for item in items if item.version]
    return f"{len(items)} entries, {len(versions)} with versions"


SEQUENCES: dict[str, Callable[[Target, Callable[[str], None]], Steps]] = {
    "sushy": sushy_sequence,
    "greenlight": greenlight_sequence,
}


# -- the child process that runs one library -----------------------------------------------------


def rss_bytes() -> int:
    """Resident memory of this process now."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def serve_worker(library: str) -> None:
    """Run the library's sequence on each Target read from stdin. Before each step the worker
    says {"step": name} and waits for a line back (the parent reads its request counter then);
    after the last it answers {"done": ...} with the times, outcomes and memory."""
    sequence = SEQUENCES[library]
    started_rss = rss_bytes()

    def boundary(name: str) -> None:
        print(json.dumps({"step": name}), flush=True)
        sys.stdin.readline()

    for line in iter(sys.stdin.readline, ""):
        steps = sequence(Target(**json.loads(line)), boundary)
        done = {
            "wall_s": sum(steps.wall_s.values()),
            "cpu_s": sum(steps.cpu_s.values()),
            "step_wall_s": steps.wall_s,
            "step_cpu_s": steps.cpu_s,
            "steps": steps.outcomes,
            "rss_growth_kib": (rss_bytes() - started_rss) // 1024,
        }
        print(json.dumps({"done": done}), flush=True)


if __name__ == "__main__":
    # `python -m lab.bench_sushy_sequences worker LIBRARY`: the child process Worker starts.
    if sys.argv[1:2] == ["worker"] and sys.argv[2:3] and sys.argv[2] in SEQUENCES:
        serve_worker(sys.argv[2])
    else:
        sys.exit("usage: python -m lab.bench_sushy_sequences worker {sushy|greenlight}")
