"""Ending a run whose every phase and gate is done: the node goes to a person for approval, or
back into service when the profile returns re-checked nodes without a click.

The move itself (rows, events, the day-2 followers: a wiped node's certificate, the scheduler)
is run_end.succeed; this module says which rule, if any, returns the node.
"""

from __future__ import annotations

from ..choices import TAKE_OUT_KINDS, RunKind
from ..models import Run
from . import gates
from .run_end import succeed


def complete_run(run: Run) -> None:
    """Record the manifest the node now matches and move it to awaiting approval."""
    succeed(run, return_rule)


def return_rule(run: Run) -> str:
    """The rule that returns the finished run's node to service without a click; "" if none.

    Only tenant-release, suspect-node, burn-in and upgrade runs may, and only if the gates'
    owner allows it; the scheduler then places work on the node again.
    """
    if run.kind not in (RunKind.WIPE, *TAKE_OUT_KINDS):
        return ""
    return gates.planning().returns_to_service(run)
