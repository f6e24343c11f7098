from django.apps import AppConfig


class AcceptanceConfig(AppConfig):
    name = "acceptance"
    verbose_name = "Acceptance"
    default_auto_field = "django.db.models.BigAutoField"
