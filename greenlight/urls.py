from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("agent/v1/", include("provisioning.agent_api.urls")),
    path("", include("console.api.urls")),
    path("", include("provisioning.urls")),
    path("", include("console.urls")),
]
