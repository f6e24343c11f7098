"""The boot plane's URLs: what a node's firmware fetches (iPXE script, its ISO, boot images).

Included by provisioning.urls for the site and by greenlight.node_urls for the node plane, under
the same "provisioning" namespace in both.
"""

from django.urls import path

from . import views

urlpatterns = [
    path("boot/v1/ipxe", views.ipxe_script, name="ipxe-script"),
    path("boot/v1/media/<str:media_key>.iso", views.node_iso, name="node-iso"),
    path("boot/v1/images/", views.boot_image_index, name="boot-images"),
    path("boot/v1/images/<str:name>", views.boot_image, name="boot-image"),
]
