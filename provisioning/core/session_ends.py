"""Agent sessions end with what they served: their run, or the node's stay in a state that needs
an agent. Otherwise the token of an aborted run's ephemeral agent still polled 200 (issue 30).

Host-OS sessions of an in-service node are left alone: the gates of a suspect or burn-in run
talk to that agent, and the node serving a tenant needs none of Greenlight's moves to end it.
"""

from __future__ import annotations

from typing import Any

from fleet.choices import NodeState
from fleet.lifecycle import ACTIVE_STATES
from fleet.models import Node

from ..agents.link import EPHEMERAL, revoke_sessions
from ..models import Run
from .run_end import How, RunEnding

# A failed node's run can be retried from its failed phase with the agent that is up.
RETRYABLE_STATES = frozenset({NodeState.FAILED})


def follow_run_end(ending: RunEnding) -> None:
    """run_end's follower: a run that succeeded or was aborted ends its sessions."""
    if ending.run is not None and ending.how in (How.SUCCEEDED, How.ABORTED):
        end_run_sessions(ending.run)


def end_run_sessions(run: Run) -> None:
    """The run ended for good (succeeded or aborted): its ephemeral environment's sessions end.

    A failed run is not over: a person may retry it from the failed phase, and an in-band phase
    retried there talks to the agent that is still up (no reboot to get a new one).
    """
    revoke_sessions(run.node_id, EPHEMERAL)


def end_sessions_on_move(
    sender: Any, *, node: Node, from_state: str, to_state: str, **kwargs: Any
) -> None:
    """fleet.lifecycle.node_moved's follower, in the move's transaction: a node leaving the
    states where a run drives its ephemeral agent ends those sessions; a decommissioned node
    ends them all."""
    if to_state == NodeState.DECOMMISSIONED:
        revoke_sessions(node.pk)
    elif to_state not in ACTIVE_STATES and to_state not in RETRYABLE_STATES:
        revoke_sessions(node.pk, EPHEMERAL)
