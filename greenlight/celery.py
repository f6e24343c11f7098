"""The Celery app: stock set-up, configuration from Django settings under CELERY_."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")

app = Celery("greenlight")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

if os.environ.get("GREENLIGHT_QUERY_LOG_DIR"):
    from .instrumentation import install_celery_hooks

    install_celery_hooks()
