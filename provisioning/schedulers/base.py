"""What every scheduler adapter does, and the one way they run a command-line tool."""

from __future__ import annotations

import logging
import subprocess
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleet.models import Node

logger = logging.getLogger(__name__)

# Seconds a scheduler's command-line tool may take before Greenlight stops waiting for it.
COMMAND_TIMEOUT_S = 60.0


class SchedulerError(Exception):
    """The scheduler refused or does not know the node; retrying soon will not help."""


class SchedulerUnavailable(SchedulerError):
    """The scheduler did not answer (controller down, API unreachable, tool timed out)."""


class Scheduler(ABC):
    """Cordon, drain and readmit one node. Calls are idempotent: a resumed phase repeats them."""

    name: str = ""
    label: str = ""

    @abstractmethod
    def cordon(self, node: Node, reason: str) -> None:
        """Stop new work landing on the node and ask the work on it to leave."""

    @abstractmethod
    def is_drained(self, node: Node) -> bool:
        """Whether no tenant job runs on the node any more."""

    @abstractmethod
    def uncordon(self, node: Node) -> None:
        """Let the scheduler place work on the node again."""

    @staticmethod
    def node_name(node: Node) -> str:
        """The node's name in the scheduler: its hostname, else its serial."""
        return node.hostname or node.serial


def run_tool(args: list[str], *, timeout: float = COMMAND_TIMEOUT_S) -> str:
    """Run a scheduler's tool (never through a shell) and return its standard output.

    A missing tool or a timeout is SchedulerUnavailable; a non-zero exit is SchedulerError
    carrying the tool's own words.
    """
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise SchedulerUnavailable(f"{args[0]} is not installed on this worker") from None
    except subprocess.TimeoutExpired:
        raise SchedulerUnavailable(
            f"{args[0]} {args[1]} took longer than {timeout:.0f} s"
        ) from None
    if done.returncode != 0:
        words = (done.stderr or done.stdout).strip().splitlines()
        raise SchedulerError(
            f"{' '.join(args[:2])} exited {done.returncode}: {words[-1] if words else 'no output'}"
        )
    return done.stdout
