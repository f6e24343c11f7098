"""The Celery app: stock set-up, configuration from Django settings under CELERY_."""

import os

from celery import Celery
from celery.signals import task_prerun, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")

app = Celery("greenlight")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def shorten_interpreter_turns(**_: object) -> None:
    """Hand the interpreter lock over more often in a worker (settings say why)."""
    import sys

    from django.conf import settings

    sys.setswitchinterval(settings.GREENLIGHT_WORKER_SWITCH_INTERVAL_MS / 1000)


@task_prerun.connect
def recycle_old_db_connections(task=None, **_: object) -> None:
    """Replace this thread's connection only when it is past CONN_MAX_AGE or broken.

    CELERY_DB_REUSE_MAX stops Celery from closing it around every task; this keeps Django's
    own lifetime and health rules, as a request would. An eager task runs inside its caller's
    transaction, whose connection is not ours to close.
    """
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


if os.environ.get("GREENLIGHT_QUERY_LOG_DIR"):
    from common.instrumentation import install_celery_hooks

    install_celery_hooks()
