"""WSGI entry point of the node plane: the agents' API and the boot plane, served apart from
the pages (gunicorn greenlight.node_wsgi:application; the proxy sends /agent/v1/ and /boot/v1/
here). Its settings keep only the middleware those requests need (settings.GREENLIGHT_NODE_PLANE):
an agent's poll went through sessions, auth, messages, CSP and axes for nothing.
"""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from common.gc_tuning import settle_long_lived_objects

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")
os.environ["GREENLIGHT_NODE_PLANE"] = "1"

application = get_wsgi_application()
settle_long_lived_objects(settings.GREENLIGHT_GC_YOUNG_THRESHOLD)
