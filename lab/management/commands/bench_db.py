"""`manage.py bench_db`: a fresh database for the benchmark (PostgreSQL: dropped and created)."""

from __future__ import annotations

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

from greenlight.celery import app


class Command(BaseCommand):
    help = "Recreate the benchmark's database (named by DATABASE_URL) and migrate it."

    def handle(self, *args, **options) -> None:
        if connection.vendor == "postgresql":
            name = connection.settings_dict["NAME"]
            connection.close()
            admin = connection.copy()
            admin.settings_dict["NAME"] = "postgres"
            with admin.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                cursor.execute(f'CREATE DATABASE "{name}"')
            admin.close()
        call_command("migrate", verbosity=0)

        # Steps a stopped earlier run left in the queue would only name runs that are gone.
        purged = app.control.purge()
        self.stdout.write(
            f"benchmark database ready ({connection.vendor}); {purged} stale task(s) purged"
        )
