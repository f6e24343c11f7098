"""The lab side of the control-plane failover test, run as a child process.

It is a Greenlight process like any other, told the HA PostgreSQL pair and the sentinels by its
environment: it starts a lab rack (BMCs, agents), two workers, two node planes behind a proxy
and beat (lab/run.py), starts a run on every node, and answers the test's commands, one JSON
line each on the stdout it was started with (everything else it prints goes to stderr):

    progress              each node's run: its status and current phase, and its HGX stage
    hold                  arm every node whose run has not reached hgx_firmware: its BMC
                          accepts the HGX update and holds the answer (the worker is pinned)
    kill worker-of N      SIGKILL the worker holding node N's run
    kill node-plane N     SIGKILL node plane N (the agents' web process)
    finish                wait for every run to end; what the lab's BMCs and agents saw, and
                          the rows the runs left (nodes, phases, events)

The BMCs and agents live in this process, so only it can say what they counted.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")
django.setup()

from django.db import DatabaseError, close_old_connections  # noqa: E402  (after setup())

from fleet.models import Event, Node  # noqa: E402
from lab import processes  # noqa: E402
from lab.run import LabRun, LabRunConfig  # noqa: E402
from provisioning.choices import ACTIVE_RUN_STATUSES  # noqa: E402
from provisioning.core.phases import PHASE_NAMES  # noqa: E402
from provisioning.models import AgentCommand, PhaseRecord, Run  # noqa: E402

# The component whose update node 0's BMC accepts but answers too late (lab/bmc): the worker
# sending it is pinned in its step, the moment to kill it.
HELD = "hgx"


def rows(read):
    """`read()` through a failover: a dropped connection is dropped and the read tried again."""
    for _ in range(600):
        close_old_connections()
        try:
            return read()
        except DatabaseError:
            time.sleep(0.1)
    raise RuntimeError("the database did not come back")


def progress(lab: LabRun, runs: dict[int, Run]) -> dict:
    ids = [runs[n.pk].pk for n in lab.nodes]
    found = rows(
        lambda: {
            pk: (status, phase, held)
            for pk, status, phase, held in Run.objects.filter(pk__in=ids).values_list(
                "pk", "status", "current_phase", "held_by"
            )
        }
    )
    stages = rows(
        lambda: dict(
            PhaseRecord.objects.filter(run_id__in=ids, phase=f"{HELD}_firmware").values_list(
                "run_id", "stage"
            )
        )
    )
    return {
        "runs": [found[pk] for pk in ids],
        "held_accepted": [node.flashes.count(HELD) for node in lab.hall.nodes],
        # "pushing" while the worker waits for the BMC's answer to its update (stage saved
        # before it asks, moved on once the answer is in or a later look resumes).
        "held_stage": [stages.get(pk, "") for pk in ids],
    }


def hold(lab: LabRun, runs: dict[int, Run]) -> dict:
    """Arm the held HGX answer on every node whose run has not reached hgx_firmware yet.

    Armed when the test says (after the Redis failover), not at the start: how long the two
    failovers take depends on the machine's load, and a node armed at the start may have
    passed its HGX update before the test looks for the pinned worker."""
    before_hgx = PHASE_NAMES[: PHASE_NAMES.index(f"{HELD}_firmware")]
    found = progress(lab, runs)["runs"]
    armed = [
        index
        for index, (status, phase, _) in enumerate(found)
        if status in ACTIVE_RUN_STATUSES and (not phase or phase in before_hgx)
    ]
    for index in armed:
        lab.hall.set_fault(index, f"update_answer_held:{HELD}")
    return {"armed": armed}


def kill(lab: LabRun, runs: dict[int, Run], what: str, index: str) -> dict:
    if what == "node-plane":
        proc = lab.node_planes[int(index)]
        processes.kill(proc)
        return {"killed": proc.pid}
    # Workers are named lab0-…, lab1-… (LabRun.add_worker, lab/processes.start_worker).
    node = lab.nodes[int(index)]
    held_by = rows(lambda: Run.objects.get(pk=runs[node.pk].pk).held_by)
    name = held_by.split("-")[0]
    if not name.startswith("lab"):
        return {"error": f"no worker of ours holds the run: {held_by!r}"}
    processes.kill(lab.workers[int(name.removeprefix("lab"))])
    return {"killed": held_by}


def finish(lab: LabRun, runs: dict[int, Run]) -> dict:
    ids = [r.pk for r in runs.values()]
    deadline = time.monotonic() + lab.config.timeout_s
    active = Run.objects.filter(pk__in=ids, status__in=ACTIVE_RUN_STATUSES)
    while rows(active.exists) and time.monotonic() < deadline:
        time.sleep(0.25)
    agents = lab.site.agents if lab.site else None
    nodes = []
    for lab_node, node in zip(lab.hall.nodes, lab.nodes, strict=True):
        run = rows(lambda node=node: Run.objects.get(pk=runs[node.pk].pk))
        nodes.append(
            {
                "serial": node.serial,
                "state": rows(lambda node=node: Node.objects.get(pk=node.pk).state),
                "run": run.pk,
                "status": run.status,
                "last_error": run.last_error,
                "bmc_flashes": Counter(lab_node.flashes),
                # The agent flashes every device of a kind that needs it, with one command.
                "inband_flashes": dict(agents.states[node.serial].flashes) if agents else {},
                "flash_commands": rows(
                    lambda run=run: [
                        {
                            "component": c.params["component"],
                            "status": c.status,
                            "devices": [f["device"] for f in c.result.get("flashed", [])],
                        }
                        for c in AgentCommand.objects.filter(
                            run=run, kind="flash_firmware"
                        ).order_by("params__component")
                    ]
                ),
                "most_acts_in_flight": lab_node.most_acts_in_flight,
                "phases": rows(
                    lambda run=run: list(
                        PhaseRecord.objects.filter(run=run)
                        .order_by("order")
                        .values_list("phase", "status", "attempts")
                    )
                ),
                "events": rows(
                    lambda node=node: list(
                        Event.objects.filter(node=node)
                        .order_by("pk")
                        .values("pk", "kind", "message", "data")
                    )
                ),
            }
        )
    connections = lab.proxy.connections if lab.proxy else {}
    return {"nodes": nodes, "proxy": [count for _, count in sorted(connections.items())]}


def main() -> None:
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever else writes to stdout (logging, a library) goes to stderr
    # Terminated, it still leaves through LabRun's exit, which stops what it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    def say(answer: dict) -> None:
        answers.write(json.dumps(answer, default=str) + "\n")
        answers.flush()

    log_dir, nodes, speed = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    config = LabRunConfig(
        nodes=nodes,
        faults="none",
        speed=speed,
        soak_hours=0.25,
        workers=2,
        concurrency=8,
        node_planes=2,
        timeout_s=240,
        extra_env={
            # Longer than the Redfish client's 10 s timeout (a pinned step is not taken over
            # while its worker lives), short enough to keep the test short.
            "GREENLIGHT_STEP_LEASE_S": "15",
        },
    )
    with LabRun(config, log_dir=log_dir) as lab:
        runs = lab.start_pass()
        say({"nodes": [n.pk for n in lab.nodes], "runs": [runs[n.pk].pk for n in lab.nodes]})
        for line in sys.stdin:
            command, *args = line.split()
            if command == "progress":
                say(progress(lab, runs))
            elif command == "hold":
                say(hold(lab, runs))
            elif command == "kill":
                say(kill(lab, runs, *args))
            elif command == "finish":
                say(finish(lab, runs))
                break


if __name__ == "__main__":
    main()
