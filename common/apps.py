from django.apps import AppConfig


class CommonConfig(AppConfig):
    """The shared bases, as an app only so that their system checks run with every command."""

    name = "common"
    verbose_name = "Greenlight (shared bases)"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the checks; needs the app registry)
