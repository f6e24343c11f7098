"""Routes of the fleet API, registered on the shared /api/v1/ router."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from . import views


def register(router: DefaultRouter) -> None:
    router.register("sites", views.SiteViewSet)
    router.register("racks", views.RackViewSet)
    router.register("skus", views.SkuViewSet)
    router.register("nodes", views.NodeViewSet)
    router.register("manifests", views.ManifestViewSet)
    router.register("events", views.EventViewSet)
