"""On PostgreSQL a connection prepares the statements it repeats (server-side binding, psycopg's
prepared statements): the server parses and plans each once per connection, not once per query.
GREENLIGHT_DB_PREPARED_STATEMENTS=0 turns it off for a pooler that cannot keep them."""

from __future__ import annotations

import pytest
from django.db import connection

from provisioning.core.engine import RUN_FOR_STEP
from provisioning.core.runs import start_run
from tests import factories
from tests.support.processes import run_python

POSTGRES = "postgres://postgres@127.0.0.1:5432/greenlight_settings_only"


def database_options(**variables: str) -> str:
    """The default database's OPTIONS as the settings build them for `variables`."""
    probe = (
        "from django.conf import settings; "
        "options = settings.DATABASES['default'].get('OPTIONS', {}); "
        "print(options.get('server_side_binding'), options.get('prepare_threshold'))"
    )
    result = run_python(probe, **variables)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_postgresql_connections_bind_on_the_server_and_prepare_by_default():
    assert database_options(DATABASE_URL=POSTGRES) == "True 5"


def test_prepared_statements_can_be_turned_off_for_a_pooler():
    assert (
        database_options(DATABASE_URL=POSTGRES, GREENLIGHT_DB_PREPARED_STATEMENTS="0")
        == "None None"
    )


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's prepared statements")
def test_a_step_read_repeated_is_prepared_once_on_the_server():
    factories.make_manifest()
    run = start_run(factories.make_node())
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        before = cursor.fetchone()[0]
    for _ in range(6):
        assert RUN_FOR_STEP.first(run.pk, run.step).pk == run.pk
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert len(prepared) > before
    assert any('FROM "provisioning_run"' in statement for statement in prepared)
