"""System checks of the scheduler adapter (a production process names a real one), of the
lab's wall clock (never outside lab mode) and of the agents' poll intervals (under their
keep-alive).

Its ids keep the greenlight. prefix of the environment checks (common/checks.py) it sits
beside in every report; it lives here because the adapters are provisioning's.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks

from agent.protocol import KEEPALIVE_S
from common.lab_mode import LAB_MODE_VARIABLE

from .agents.intervals import QUIET_POLL_FACTOR, longest_interval_s
from .schedulers import ADAPTERS

REAL_SCHEDULERS = sorted(name for name in ADAPTERS if name != "lab")


@checks.register()
def check_scheduler(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """The drain before a wipe goes to a real scheduler outside lab mode."""
    name = settings.GREENLIGHT_SCHEDULER
    choices = ", ".join(REAL_SCHEDULERS)
    if not name:
        return [
            checks.Error(
                "GREENLIGHT_SCHEDULER is not set: nothing would drain a tenant's node before "
                "its wipe.",
                hint=f"Set GREENLIGHT_SCHEDULER to one of: {choices}.",
                id="greenlight.E004",
            )
        ]
    if name not in ADAPTERS:
        return [
            checks.Error(
                f"GREENLIGHT_SCHEDULER is {name!r}, which is no scheduler adapter.",
                hint=f"Set GREENLIGHT_SCHEDULER to one of: {choices}.",
                id="greenlight.E005",
            )
        ]
    if name == "lab" and not settings.GREENLIGHT_LAB_MODE:
        return [
            checks.Error(
                "GREENLIGHT_SCHEDULER is 'lab', whose drain calls nothing, outside lab mode.",
                hint=f"Set GREENLIGHT_SCHEDULER to one of: {choices}; the lab adapter is for "
                f"demo, lab and test processes ({LAB_MODE_VARIABLE}=1).",
                id="greenlight.E006",
            )
        ]
    return []


@checks.register()
def check_wall_clock(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Maintenance windows are read against the real clock outside lab mode."""
    if settings.GREENLIGHT_WALL_CLOCK_FILE and not settings.GREENLIGHT_LAB_MODE:
        return [
            checks.Error(
                "GREENLIGHT_WALL_CLOCK_FILE is set outside lab mode: maintenance windows would be "
                "read against a time a file says, not the real one.",
                hint=f"Unset it; it is for lab and test processes ({LAB_MODE_VARIABLE}=1).",
                id="greenlight.E009",
            )
        ]
    return []


@checks.register()
def check_poll_intervals(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Every interval an agent is told is shorter than the agents' keep-alive: a poll that comes
    later finds its connection closed and sets up TCP and TLS again."""
    longest = longest_interval_s()
    if longest < KEEPALIVE_S:
        return []
    return [
        checks.Warning(
            f"agents may be told to poll {longest:g} s apart, and keep their connection only "
            f"{KEEPALIVE_S:g} s: each such poll connects (TCP and TLS) again.",
            hint=f"Keep GREENLIGHT_AGENT_IDLE_POLL_S and {QUIET_POLL_FACTOR} x "
            f"GREENLIGHT_AGENT_POLL_S under {KEEPALIVE_S:g}.",
            id="greenlight.W001",
        )
    ]
