from django.urls import path

from . import views
from .boot import views as boot_views

app_name = "provisioning"
urlpatterns = [
    path("wipes/", views.wipe_requests, name="wipes"),
    path("boot/v1/ipxe", boot_views.ipxe_script, name="ipxe-script"),
    path("boot/v1/media/<str:media_key>.iso", boot_views.node_iso, name="node-iso"),
    path("boot/v1/images/", boot_views.boot_image_index, name="boot-images"),
    path("boot/v1/images/<str:name>", boot_views.boot_image, name="boot-image"),
    path("wipes/certificates/<int:pk>/", views.certificate, name="certificate"),
    path("wipes/certificates/<int:pk>.json", views.certificate_json, name="certificate-json"),
]
