"""The API's routes: /api/v1/ (every app's viewsets), the OpenAPI schema, its docs, /metrics."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from acceptance.api.urls import register as register_acceptance
from fleet.api.urls import register as register_fleet
from fleet.api.views import NodeCsvExportView
from fleet.metrics import metrics_view
from provisioning.api.urls import register as register_provisioning

router = DefaultRouter()
register_fleet(router)
register_provisioning(router)
register_acceptance(router)

v1 = [
    # Before the router, so "export.csv" is not read as a node id.
    path("nodes/export.csv", NodeCsvExportView.as_view(), name="node-export-csv"),
    *router.urls,
]

urlpatterns = [
    path("api/v1/", include((v1, "api"))),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("metrics", metrics_view, name="metrics"),
]
