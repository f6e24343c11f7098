from django.urls import path

from . import views
from .boot import urls as boot_urls

app_name = "provisioning"
urlpatterns = [
    path("wipes/", views.wipe_requests, name="wipes"),
    *boot_urls.urlpatterns,
    path("wipes/certificates/<int:pk>/", views.certificate, name="certificate"),
    path("wipes/certificates/<int:pk>.json", views.certificate_json, name="certificate-json"),
]
