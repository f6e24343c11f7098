"""The node plane's URLs: only what agents and boot firmware reach (greenlight/node_wsgi.py)."""

from django.urls import include, path

from provisioning.boot import urls as boot_urls

urlpatterns = [
    path("agent/v1/", include("provisioning.agents.api.urls")),
    path("", include((boot_urls.urlpatterns, "provisioning"))),
]
