from django.urls import path

from . import views

app_name = "provisioning"
urlpatterns = [
    path("wipes/", views.wipe_requests, name="wipes"),
    path("wipes/certificates/<int:pk>/", views.certificate, name="certificate"),
    path("wipes/certificates/<int:pk>.json", views.certificate_json, name="certificate-json"),
]
