"""The WebSocket routes of the live view."""

from django.urls import re_path

from .consumers import LiveConsumer, NotFoundConsumer

# An id of at most 18 digits fits a 64-bit key: a longer one is a malformed path, not a query.
websocket_urlpatterns = [
    re_path(r"^ws/(?P<scope>rack|site|node)/(?P<ident>\d{1,18})/$", LiveConsumer.as_asgi()),
    re_path(r"^ws/(?P<scope>fleet)/$", LiveConsumer.as_asgi()),
    # Last: every other path is refused as not found, never a routing error (a 500).
    re_path(r"", NotFoundConsumer.as_asgi()),
]
