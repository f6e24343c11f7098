"""Routes of the acceptance API, registered on the shared /api/v1/ router."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter

from . import views


def register(router: DefaultRouter) -> None:
    router.register("acceptance-profiles", views.AcceptanceProfileViewSet)
    router.register("gate-results", views.GateResultViewSet)
    router.register("decisions", views.DecisionViewSet)
