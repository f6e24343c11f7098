from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "provisioning"
    verbose_name = "Provisioning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from fleet.lifecycle import node_moved

        from . import checks  # noqa: F401  (registers the scheduler check; needs the app registry)
        from .session_ends import end_sessions_on_move

        # A node's move ends the agent sessions its new state does not need (fleet cannot call
        # provisioning: packages depend one way).
        node_moved.connect(end_sessions_on_move, dispatch_uid="provisioning.session_ends")
