"""Slurm: drain with `scontrol update ... State=DRAIN`, drained when idle with no CPU allocated."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .base import Scheduler, SchedulerError, run_tool

if TYPE_CHECKING:
    from fleet.models import Node

_STATE = re.compile(r"(?:^|\s)State=(\S+)")
_CPU_ALLOC = re.compile(r"(?:^|\s)CPUAlloc=(\d+)")
# Base states in which a node runs no job.
_JOBLESS = {"IDLE", "DOWN", "DRAINED", "FUTURE"}


def parse_node(text: str) -> tuple[str, set[str], int]:
    """(base state, flags, allocated CPUs) from `scontrol --oneliner show node NAME`.

    State reads like "IDLE+DRAIN" or "MIXED+DRAIN" (draining) or "DOWN*+DRAIN"; the trailing
    markers (* not responding, ~ powered off, # powering up, % powering down) are dropped.
    """
    state = _STATE.search(text)
    cpus = _CPU_ALLOC.search(text)
    if state is None:
        raise SchedulerError(f"scontrol show node printed no State: {text.strip()[:200]}")
    base, *flags = (part.rstrip("*~#%$!@^-") for part in state.group(1).split("+"))
    return base, set(flags), int(cpus.group(1)) if cpus else 0


def is_drained_state(base: str, flags: set[str], cpu_alloc: int) -> bool:
    """Drained: the DRAIN flag is set (or the state is DRAINED), no job runs or completes."""
    draining = "DRAIN" in flags or base == "DRAINED"
    return draining and base in _JOBLESS and "COMPLETING" not in flags and cpu_alloc == 0


class SlurmScheduler(Scheduler):
    name = "slurm"
    label = "Slurm"

    def cordon(self, node: Node, reason: str) -> None:
        # Slurm keeps the reason on the node for `sinfo -R`; one line, no quoting needed (no shell).
        reason = " ".join(reason.split())[:200] or "greenlight"
        run_tool(
            ["scontrol", "update", f"NodeName={self.node_name(node)}", "State=DRAIN"]
            + [f"Reason={reason}"]
        )

    def is_drained(self, node: Node) -> bool:
        text = run_tool(["scontrol", "--oneliner", "show", "node", self.node_name(node)])
        return is_drained_state(*parse_node(text))

    def uncordon(self, node: Node) -> None:
        # Slurm refuses RESUME on a node that is not drained or down ("Invalid node state
        # specified"): a node admitted for the first time, or resumed twice, is left as it is.
        base, flags, _ = parse_node(
            run_tool(["scontrol", "--oneliner", "show", "node", self.node_name(node)])
        )
        if {"DRAIN", "FAIL"} & flags or base in ("DRAINED", "DOWN"):
            run_tool(["scontrol", "update", f"NodeName={self.node_name(node)}", "State=RESUME"])
