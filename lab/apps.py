from django.apps import AppConfig


class LabConfig(AppConfig):
    """Installed only so its management commands (`lab`, `bench`) are found; it has no models."""

    name = "lab"
    verbose_name = "Lab"
