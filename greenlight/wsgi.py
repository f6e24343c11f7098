"""WSGI entry point: the agents' API needs no sockets, so it is served by a WSGI server."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")

application = get_wsgi_application()
