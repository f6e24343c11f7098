"""The pages' routes, in the "console" namespace."""

from django.urls import path

from . import firmware_views, rack_system_views, rollout_views, views

# The paths are the ones the pages always had, so bookmarks keep working; only the names moved
# from the "fleet" namespace (the app the pages lived in once) to the console's own.
app_name = "console"
urlpatterns = [
    path("", views.site_overview, name="overview"),
    path("snapshot.json", views.overview_snapshot, name="overview-snapshot"),
    path("sites/<int:pk>/", views.site_overview, name="site"),
    path("sites/<int:pk>/snapshot.json", views.overview_snapshot, name="site-snapshot"),
    path("racks/<int:pk>/", views.rack_view, name="rack"),
    path("racks/<int:pk>/snapshot.json", views.rack_snapshot, name="rack-snapshot"),
    path("racks/<int:pk>/approve-passed/", views.approve_passed, name="rack-approve-passed"),
    path(
        "racks/<int:pk>/approve-rack/", rack_system_views.approve_rack, name="rack-system-approve"
    ),
    path(
        "racks/<int:pk>/quarantine-rack/",
        rack_system_views.quarantine_rack,
        name="rack-system-quarantine",
    ),
    path("nodes/<int:pk>/", views.node_detail, name="node"),
    path("nodes/<int:pk>/panel/", views.node_panel, name="node-panel"),
    path("nodes/<int:pk>/approve/", views.approve, name="node-approve"),
    path("nodes/<int:pk>/quarantine/", views.quarantine, name="node-quarantine"),
    path("nodes/<int:pk>/audit/", views.audit, name="node-audit"),
    path("nodes/<int:pk>/moves/<slug:move>/", views.move, name="node-move"),
    path("nodes/<int:pk>/upload/", views.upload, name="node-upload"),
    path("phase-records/<int:pk>/log/", views.phase_log, name="phase-log"),
    path(
        "phase-records/<int:pk>/log/download/", views.phase_log_download, name="phase-log-download"
    ),
    path("firmware/", firmware_views.firmware_view, name="firmware"),
    path("rollouts/", rollout_views.rollout_list, name="rollouts"),
    path("rollouts/<int:pk>/", rollout_views.rollout_detail, name="rollout"),
    path("rollouts/<int:pk>/roll-back/", rollout_views.rollout_roll_back, name="rollout-roll-back"),
    path("rollouts/<int:pk>/<slug:verb>/", rollout_views.rollout_steer, name="rollout-steer"),
]
