"""WSGI entry point: the agents' API needs no sockets, so it is served by a WSGI server."""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from common.gc_tuning import settle_long_lived_objects

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")

application = get_wsgi_application()
settle_long_lived_objects(settings.GREENLIGHT_GC_YOUNG_THRESHOLD)
