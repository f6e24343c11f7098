from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """What people and other systems read: pages, the live view, the REST API, metrics, DCIM sync.

    The top of the stack: it reads the fleet, the runs and the gate results, and nothing below
    it imports it (docs/architecture.md, "How the packages stack").
    """

    name = "console"
    verbose_name = "Console"
