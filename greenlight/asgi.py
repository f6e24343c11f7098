"""ASGI entry point: HTTP through Django, WebSockets through Channels (authenticated, origin-checked)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

from common.gc_tuning import settle_long_lived_objects  # noqa: E402
from common.websocket_origin import SameOriginValidator  # noqa: E402
from console.routing import websocket_urlpatterns  # noqa: E402  (needs the app registry)

http_app = django_asgi_app
if settings.SERVE_STATIC:
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    http_app = ASGIStaticFilesHandler(django_asgi_app)

application = ProtocolTypeRouter(
    {
        "http": http_app,
        # The origin check refuses pages of any other scheme, host or port; the consumer
        # refuses anonymous users, unknown objects and malformed paths in connect().
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
settle_long_lived_objects(settings.GREENLIGHT_GC_YOUNG_THRESHOLD)
