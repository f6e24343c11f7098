"""System checks for the environment: a production process names what it is missing.

Lab mode (greenlight/lab_mode.py) supplies generated secrets, the embedded Redis and the lab's
scheduler adapter; a production process must be given each of them, and is told which it lacks.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from provisioning.schedulers import ADAPTERS

from .lab_mode import LAB_MODE_VARIABLE

REAL_SCHEDULERS = sorted(name for name in ADAPTERS if name != "lab")


def _setting(name: str) -> str:
    try:
        return getattr(settings, name)
    except ImproperlyConfigured:  # Django refuses to hand out an empty SECRET_KEY
        return ""


@checks.register()
def check_environment(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Secrets and Redis come from the environment outside lab mode."""
    if settings.GREENLIGHT_LAB_MODE:
        return []
    required = {
        "SECRET_KEY": ("greenlight.E001", "Django's signing key: a long random string."),
        "FIELD_ENCRYPTION_KEY": (
            "greenlight.E002",
            "the key for BMC passwords at rest: a long random string, kept apart from SECRET_KEY.",
        ),
        "REDIS_URL": ("greenlight.E003", "the Redis for live updates and the Celery broker."),
    }
    return [
        checks.Error(
            f"{name} is not set.",
            hint=f"Set {name} in the environment: {what}",
            id=check_id,
        )
        for name, (check_id, what) in required.items()
        if not _setting(name)
    ]


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
