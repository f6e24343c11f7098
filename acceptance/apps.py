from django.apps import AppConfig


class AcceptanceConfig(AppConfig):
    name = "acceptance"
    verbose_name = "Acceptance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: planning reads the models, which Django allows only
        # once every app is loaded. This is what fills provisioning's gate registry, so that
        # provisioning never imports acceptance.
        from provisioning.rack import validation

        from .planning import register
        from .rack_gate import RACK_GATE

        register()
        # The rack-wide gate a rack run ends with (issue 34), by the same inversion.
        validation.register(RACK_GATE)
