"""The API's routes: /api/v1/ (every viewset), the OpenAPI schema, its docs, /metrics."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from ..metrics import metrics_view
from . import (
    alertmanager,
    firmware_views,
    gate_views,
    rack_system_views,
    rollout_views,
    run_views,
    views,
)

router = DefaultRouter()
# The fleet.
router.register("sites", views.SiteViewSet)
router.register("racks", views.RackViewSet)
router.register("skus", views.SkuViewSet)
router.register("nodes", views.NodeViewSet)
router.register("manifests", views.ManifestViewSet)
router.register("events", views.EventViewSet)
router.register("firmware", firmware_views.FirmwareViewSet, basename="firmware")
# Rack-scale systems (GB200/GB300 NVL72): the rack with its members, and its NVLink domain.
router.register("rack-systems", rack_system_views.RackSystemViewSet)
router.register("nvlink-domains", rack_system_views.NvlinkDomainViewSet)
# Provisioning.
router.register("runs", run_views.RunViewSet)
router.register("wipe-requests", run_views.WipeRequestViewSet)
router.register("wipe-certificates", run_views.WipeCertificateViewSet)
router.register("rollouts", rollout_views.RolloutViewSet)
router.register("alertmanager", alertmanager.AlertmanagerReceiver, basename="alertmanager")
# Acceptance.
router.register("acceptance-profiles", gate_views.AcceptanceProfileViewSet)
router.register("gate-results", gate_views.GateResultViewSet)
router.register("decisions", gate_views.DecisionViewSet)

v1 = [
    # Before the router, so "export.csv" is not read as a node id.
    path("nodes/export.csv", views.NodeCsvExportView.as_view(), name="node-export-csv"),
    path(
        "firmware/export.csv",
        firmware_views.FirmwareCsvExportView.as_view(),
        name="firmware-export-csv",
    ),
    *router.urls,
]

urlpatterns = [
    path("api/v1/", include((v1, "api"))),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("metrics", metrics_view, name="metrics"),
]
