from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "provisioning"
    verbose_name = "Provisioning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from fleet.lifecycle import node_moved

        from . import checks  # noqa: F401  (registers the scheduler check; needs the app registry)
        from .agents import intervals, sessions
        from .core import contests, erase_reports, run_end, session_ends
        from .core.phases import OUT_OF_BAND_PHASE_NAMES
        from .day2 import rollouts, scheduler_sync, suspect
        from .day2.wipes import certificates as wipes
        from .rack import runs as rack_runs

        # A node's move ends the agent sessions its new state does not need (fleet cannot call
        # provisioning: packages depend one way).
        node_moved.connect(
            session_ends.end_sessions_on_move, dispatch_uid="provisioning.core.session_ends"
        )
        # A second redemption of a boot credential stops the run it served (the agent channel
        # sits below the run core and cannot call it).
        sessions.on_contest(contests.settle)
        # An agent alive through a phase that sends it nothing polls less (same reason).
        intervals.phases_without_commands(OUT_OF_BAND_PHASE_NAMES)
        # A tenant's wipe run certifies its erase (the erase phase names no wipe).
        erase_reports.register(wipes.certify_erase)
        # The day-2 modules follow the run core's one exit, told in this order (run_end).
        run_end.register(
            wipes.follow_run_end,  # wipe requests settle; a certificate names who readmitted
            suspect.follow_run_end,  # a take-out node its gates quarantined goes to break/fix
            session_ends.follow_run_end,  # a run over for good ends its agent sessions
            scheduler_sync.follow_run_end,  # the scheduler resumes or cordons the node
            rollouts.follow_run_end,  # a rollout waiting on the run starts its next node
            rack_runs.follow_run_end,  # a rack run waiting on a member's run goes on
        )
