from django.urls import re_path

from .consumers import LiveConsumer

websocket_urlpatterns = [
    re_path(r"^ws/(?P<scope>rack|site|node)/(?P<ident>\d+)/$", LiveConsumer.as_asgi()),
    re_path(r"^ws/(?P<scope>fleet)/$", LiveConsumer.as_asgi()),
]
