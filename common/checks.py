"""System checks for the environment: a production process names what it is missing or misread.

Lab mode (common/lab_mode.py) supplies generated secrets, the embedded Redis and the lab's
scheduler adapter; a production process must be given each of them, and is told which it lacks.
The scheduler's own check is provisioning's (provisioning/checks.py), which owns the adapters.

Settings are read strictly (common/env.py): a value the settings could not take, and a
GREENLIGHT_ variable nothing reads, fail the check with the variable named, in lab mode too.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from . import env

# GREENLIGHT_ variables read outside the settings' readers, each by its reader.
READ_ELSEWHERE = frozenset(
    {
        "GREENLIGHT_BMC_PASSWORD",  # manage.py enroll: the BMC password, kept off the command line
        "GREENLIGHT_QUERY_LOG_SHAPES",  # common/instrumentation.py, for the benchmark
        "GREENLIGHT_UI_DRIVER",  # tests/ui/conftest.py: which driver the UI tests use
    }
)


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
        "REDIS_URL": (
            "greenlight.E003",
            "the Redis for live updates and the Celery broker (or REDIS_SENTINELS).",
        ),
    }
    return [
        checks.Error(
            f"{name} is not set.",
            hint=f"Set {name} in the environment: {what}",
            id=check_id,
        )
        for name, (check_id, what) in required.items()
        if not _setting(name) and not (name == "REDIS_URL" and settings.REDIS_SENTINELS)
    ]


@checks.register()
def check_setting_values(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A variable whose value the settings could not take: not a boolean, number or in bounds."""
    return [
        checks.Error(
            reason,
            hint=f"Fix or unset {name}; until then its default stands in.",
            id="greenlight.E007",
        )
        for name, reason in sorted(env.problems().items())
    ]


@checks.register()
def check_unknown_variables(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A GREENLIGHT_ variable that nothing reads: a misspelt name would otherwise do nothing."""
    known = env.names_read() | READ_ELSEWHERE
    return [
        checks.Error(
            f"{name} is set but Greenlight reads no such variable.",
            hint="Check the name against docs/operators-guide.md, or unset it.",
            id="greenlight.E008",
        )
        for name in sorted(os.environ)
        if name.startswith("GREENLIGHT_") and name not in known
    ]
