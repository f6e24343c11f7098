"""The engine's prepared reads give what the querysets they were built from give, in one query."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.db.models import OuterRef
from django.utils import timezone

from common.prepared_reads import PreparedRead
from fleet.models import Node
from provisioning.agents.intervals import INTERVAL_FACTS, interval_facts
from provisioning.agents.sessions import (
    CHECK_IN_CREDENTIAL,
    POLL_SESSION,
    REPORTED_COMMAND,
    REPORTED_COMMAND_WITH_FACTS,
    _reported_commands,
    _reported_commands_with_facts,
)
from provisioning.boot.credentials import hash_secret, live_credentials
from provisioning.choices import PhaseStatus
from provisioning.core.engine import NEXT_RECORD, RUN_FOR_STEP
from provisioning.core.runs import start_run
from provisioning.models import AgentCommand, AgentSession, PhaseRecord, Run
from tests import factories
from tests.support.scenes import booted_secret


def field_values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


@pytest.fixture
def two_runs(node, manifest, django_capture_on_commit_callbacks):
    other = factories.make_node(rack=node.rack, bmc_password="another-pass", mac_addresses=[])
    with django_capture_on_commit_callbacks(execute=False):
        return start_run(node), start_run(other)


@pytest.mark.django_db
def test_the_run_of_a_step_is_the_orm_s_run_with_node_rack_and_manifest(
    two_runs, django_assert_num_queries
):
    for run in two_runs:
        Run.objects.filter(pk=run.pk).update(step=3)
        expected = Run.objects.select_related("node", "node__rack", "manifest").get(pk=run.pk)
        with django_assert_num_queries(1):
            got = RUN_FOR_STEP.first(run.pk, 3)
            # Everything a step touches came with the one read.
            assert got.node.rack.site_id == expected.node.rack.site_id
            assert got.manifest.spec == expected.manifest.spec
        assert field_values(got) == field_values(expected)
        assert field_values(got.node) == field_values(expected.node)
        assert field_values(got.node.rack) == field_values(expected.node.rack)
        assert field_values(got.manifest) == field_values(expected.manifest)
        # Decrypted and decoded as the ORM does: the password, the JSON of MACs and the spec.
        assert got.node.bmc_password == Node.objects.get(pk=run.node_id).bmc_password
        assert isinstance(got.manifest.spec, dict) and isinstance(got.node.mac_addresses, list)
        assert not got._state.adding and got._state.db == "default"
    assert RUN_FOR_STEP.first(two_runs[0].pk, 4) is None  # another step: a stale task


@pytest.mark.django_db
def test_the_next_record_is_the_first_unfinished_phase_with_its_command(
    two_runs, django_assert_num_queries
):
    run = two_runs[0]
    first, second = run.phases.order_by("order")[:2]
    PhaseRecord.objects.filter(pk=first.pk).update(status=PhaseStatus.DONE)
    command = AgentCommand.objects.create(node=run.node, run=run, phase=second.phase, kind="x")
    PhaseRecord.objects.filter(pk=second.pk).update(command=command)
    with django_assert_num_queries(1):
        record = NEXT_RECORD.first(run.pk)
        assert record.command.kind == "x"
    assert record.pk == second.pk
    assert NEXT_RECORD.first(two_runs[1].pk).run_id == two_runs[1].pk
    run.phases.update(status=PhaseStatus.SKIPPED)
    assert NEXT_RECORD.first(run.pk) is None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_each_thread_compiles_against_its_own_connection(node, manifest):
    run = start_run(node)
    found = []

    def read() -> None:
        try:
            found.append(RUN_FOR_STEP.first(run.pk, run.step).node_id)
        finally:
            connection.close()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    assert found == [node.pk] and RUN_FOR_STEP.first(run.pk, run.step).node_id == node.pk


@pytest.mark.django_db
def test_arguments_must_be_integers_strings_or_aware_datetimes_that_reach_the_query(node):
    for wrong in (1.0, True, None, [1], datetime(2026, 1, 1)):
        with pytest.raises(TypeError, match="integer, string or datetime|aware"):
            RUN_FOR_STEP.first(wrong, 2)
    ignores_its_argument = PreparedRead(lambda run_id: Run.objects.all()[:1])
    with pytest.raises(ValueError, match="did not reach"):
        ignores_its_argument.first(1)
    values = PreparedRead(lambda run_id: Run.objects.filter(pk=run_id).values("pk"))
    with pytest.raises(ValueError, match="plain model instances"):
        values.first(1)


@pytest.mark.django_db
def test_a_poll_s_session_is_the_orm_s_with_its_annotations_from_a_read_compiled_once(
    node, manifest, django_assert_num_queries
):
    """The poll's read takes a string (the token's hash) and a datetime (the window of recent
    activity), and gives the annotations the ORM would; the queryset is built once a thread."""
    start_run(node)
    now = timezone.now()
    older = AgentSession.objects.create(
        node=node, boot_id="b1", environment="ephemeral", token_hash="h1",
        created_at=now - timedelta(minutes=30),
    )  # fmt: skip
    newer = AgentSession.objects.create(
        node=node, boot_id="b2", environment="ephemeral", token_hash="h2", created_at=now
    )
    AgentCommand.objects.create(node=node, session=newer, phase="x", kind="x", status="sent")
    built = []
    read = PreparedRead(lambda h, since: built.append(h) or POLL_SESSION.build(h, since))
    for session in (older, newer):
        for since in (now - timedelta(minutes=5), now - timedelta(hours=1)):
            expected = POLL_SESSION.build(session.token_hash, since).get()
            with django_assert_num_queries(1):
                got = read.first(session.token_hash, since)
            assert field_values(got) == field_values(expected)
            assert field_values(got.node) == field_values(expected.node)
            for name in (
                "has_queued_commands",
                "newest_sent_id",
                "second_sent_id",
                *INTERVAL_FACTS,
            ):
                assert getattr(got, name) == getattr(expected, name), name
    assert len(built) == 1
    assert read.first("no-such-hash", now) is None
    # The window reached the query: the newer boot is recent in the one and not the other.
    assert read.first("h2", now - timedelta(minutes=5)).boot_at is not None
    assert read.first("h2", now + timedelta(minutes=5)).boot_at is None


@pytest.mark.django_db
def test_the_live_session_is_the_newest_unrevoked_one_of_the_environment(node):
    from provisioning.agents.link import live_session

    def session(boot: str, environment: str, minutes_ago: int, revoked=False, of=node):
        at = timezone.now() - timedelta(minutes=minutes_ago)
        return AgentSession.objects.create(
            node=of, boot_id=boot, environment=environment, token_hash=boot, created_at=at,
            revoked_at=at if revoked else None,
        )  # fmt: skip

    assert live_session(node) is None
    pxe = session("b1", "ephemeral", 30)
    host = session("b2", "host_os", 20)
    session("b3", "host_os", 10, revoked=True)
    session("b4", "ephemeral", 5, of=factories.make_node())  # another node's never counts
    assert live_session(node).pk == host.pk
    assert live_session(node, "ephemeral").pk == pxe.pk
    assert live_session(node, "host_os").pk == host.pk
    assert live_session(node, "no-such-environment") is None


@pytest.mark.django_db
def test_a_check_in_s_and_a_result_s_reads_are_the_orm_s_with_the_interval_facts(
    node, manifest, django_assert_num_queries
):
    run = start_run(node)
    secret = booted_secret(run)
    secret_hash = hash_secret(secret)
    since = timezone.now() - timedelta(minutes=5)
    expected = (
        live_credentials(secret_hash).annotate(**interval_facts(OuterRef("node_id"), since)).get()
    )
    with django_assert_num_queries(1):
        got = CHECK_IN_CREDENTIAL.first(secret_hash, since)
        assert got.node.rack_id == node.rack_id and got.run.pk == run.pk
    assert field_values(got) == field_values(expected)
    assert {n: getattr(got, n) for n in INTERVAL_FACTS} == {
        n: getattr(expected, n) for n in INTERVAL_FACTS
    }
    assert CHECK_IN_CREDENTIAL.first("no-such-hash", since) is None

    session = AgentSession.objects.create(
        node=node, boot_id="b1", environment="ephemeral", token_hash="h1"
    )
    command = AgentCommand.objects.create(node=node, session=session, phase="x", kind="x")
    AgentCommand.objects.create(node=node, session=session, phase="y", kind="y", status="sent")
    reports = (
        (REPORTED_COMMAND, (command.pk, "h1")),
        (REPORTED_COMMAND_WITH_FACTS, (command.pk, "h1", since)),
    )
    for read, args in reports:
        orm = (_reported_commands_with_facts if len(args) == 3 else _reported_commands)(*args)
        expected = orm.get()
        with django_assert_num_queries(1):
            got = read.first(*args)
            assert got.session.node.pk == node.pk
        assert field_values(got) == field_values(expected)
        if len(args) == 3:
            assert got.command_running is True  # the other command, not this one
            assert {n: getattr(got, n) for n in INTERVAL_FACTS} == {
                n: getattr(expected, n) for n in INTERVAL_FACTS
            }
        assert read.first(command.pk, "h2", *args[2:]) is None  # another boot's token
