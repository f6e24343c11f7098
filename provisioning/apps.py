from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "provisioning"
    verbose_name = "Provisioning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from fleet.lifecycle import node_moved

        from . import (
            checks,  # noqa: F401  (registers the scheduler check; needs the app registry)
            rollout_nudge,
            run_end,
            scheduler_sync,
            session_ends,
            suspect,
            wipes,
        )

        # A node's move ends the agent sessions its new state does not need (fleet cannot call
        # provisioning: packages depend one way).
        node_moved.connect(
            session_ends.end_sessions_on_move, dispatch_uid="provisioning.session_ends"
        )
        # The day-2 modules follow the run core's one exit, told in this order (run_end).
        run_end.register(
            wipes.follow_run_end,  # wipe requests settle; a certificate names who readmitted
            suspect.follow_run_end,  # a take-out node its gates quarantined goes to break/fix
            session_ends.follow_run_end,  # a run over for good ends its agent sessions
            scheduler_sync.follow_run_end,  # the scheduler resumes or cordons the node
            rollout_nudge.follow_run_end,  # a rollout waiting on the run starts its next node
        )
