"""Routes of the provisioning API, registered on the shared /api/v1/ router."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from . import alertmanager, views


def register(router: DefaultRouter) -> None:
    router.register("runs", views.RunViewSet)
    router.register("wipe-requests", views.WipeRequestViewSet)
    router.register("wipe-certificates", views.WipeCertificateViewSet)
    router.register("alertmanager", alertmanager.AlertmanagerReceiver, basename="alertmanager")
