from django.apps import AppConfig


class GreenlightConfig(AppConfig):
    """The project itself, as an app only so that its system checks run with every command."""

    name = "greenlight"
    verbose_name = "Greenlight"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the checks; needs the app registry)
