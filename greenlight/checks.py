"""System checks for the environment: a production process names what it is missing.

Lab mode (greenlight/lab_mode.py) supplies generated secrets, the embedded Redis and the lab's
scheduler adapter; a production process must be given each of them, and is told which it lacks.
The scheduler's own check is provisioning's (provisioning/checks.py), which owns the adapters.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured


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
