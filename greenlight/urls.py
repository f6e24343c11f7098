from django.contrib import admin
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path

# The admin carries Greenlight's name, not Django's (its pages' header, <title> and index).
admin.site.site_header = "Greenlight administration"
admin.site.site_title = "Greenlight admin"
admin.site.index_title = "Fleet, provisioning and acceptance"


def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Browsers ask for /favicon.ico whatever a page links: send them to the one icon we have."""
    return HttpResponsePermanentRedirect(static("greenlight/favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("agent/v1/", include("provisioning.agents.api.urls")),
    path("", include("console.api.urls")),
    path("", include("provisioning.urls")),
    path("", include("console.urls")),
]
