"""The writes every step of a run makes, sent as SQL written once: its claim, its hand-over, the
nudge that asks for it, and its phase record's fields.

Django compiles an UPDATE afresh on every call. For the claim (a filter of two Q branches and
an F expression) that cost 1.21 ms of CPU against 0.36 ms for the same statement sent as SQL,
measured on PostgreSQL, and the hand-over is alike; a node's run takes about fifty steps, and each
claims once and hands over once. A nudge (every agent's check-in and result, 25 a node) was an
ORM UPDATE and a read after it; one UPDATE .. RETURNING says what the read did. A phase record's
save compiled its UPDATE afresh too, four or five times a look (start, stage, wait, end): 9% of
a worker's samples in the 150-node benchmark. The statements name the models' own tables and
columns (read from their _meta), so a renamed field changes them too; what each one does is
tests/provisioning/test_step_writes.py's to check, and the engine's and scheduler's tests' as
it was when the ORM wrote them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import cache

from django.db import DatabaseError, connection
from django.db.models import Field, Model

from .choices import ACTIVE_RUN_STATUSES, RunStatus
from .models import PhaseRecord, Run

# Field name -> column: the statements are written from the model, never by hand.
COLUMNS: dict[str, str] = {f.name: f.get_attname_column()[1] for f in Run._meta.concrete_fields}


def _column(field: str) -> str:
    return connection.ops.quote_name(COLUMNS[field])


@cache
def _claim_sql(vendor: str) -> str:
    table = connection.ops.quote_name(Run._meta.db_table)
    step, status, look, held = (_column(f) for f in ("step", "status", "next_look_at", "held_by"))
    return (
        f"UPDATE {table} SET {step} = {step} + 1, {status} = %s, {look} = %s, {held} = %s "
        f"WHERE {_column('id')} = %s AND {step} = %s "
        f"AND ({status} IN (%s, %s) OR ({status} = %s AND {look} < %s))"
    )


def claim_step(run_id: int, step: int, *, now: datetime, lease: datetime, worker: str) -> bool:
    """Take step `step` of the run: bump it, RUNNING under `lease`, held by `worker`. Only if the
    run waits (or is queued) for this step, or runs under a lease that lapsed before `now`;
    True when this call took it."""
    adapt = connection.ops.adapt_datetimefield_value
    params = [
        str(RunStatus.RUNNING), adapt(lease), worker, run_id, step,
        str(RunStatus.QUEUED), str(RunStatus.WAITING), str(RunStatus.RUNNING), adapt(now),
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(_claim_sql(connection.vendor), params)
        return cursor.rowcount == 1


@cache
def _hand_over_sql(vendor: str, with_reason: bool, unless_nudged: bool) -> str:
    table = connection.ops.quote_name(Run._meta.db_table)
    fields = ["status", "next_look_at", "dispatched_at", "safety_net"]
    fields += ["wait_reason"] if with_reason else []
    sets = ", ".join(f"{_column(f)} = %s" for f in fields)
    where = f"{_column('id')} = %s AND {_column('step')} = %s AND {_column('status')} = %s"
    if unless_nudged:
        nudged = _column("nudged_at")
        where += f" AND ({nudged} IS NULL OR {nudged} < %s)"
    return f"UPDATE {table} SET {sets} WHERE {where}"


def hand_over_step(
    run_id: int,
    step: int,
    *,
    due: datetime,
    dispatched_at: datetime | None,
    safety_net: bool,
    wait_reason: str | None = None,
    unless_nudged_since: datetime | None = None,
) -> bool:
    """Let go of the run that step `step` holds (RUNNING): it waits until `due`, with what it
    waits for when `wait_reason` is given. With `unless_nudged_since`, only if no nudge came
    since then. True when the run was handed over."""
    adapt = connection.ops.adapt_datetimefield_value
    params: list = [str(RunStatus.WAITING), adapt(due), adapt(dispatched_at), safety_net]
    if wait_reason is not None:
        params.append(wait_reason)
    params += [run_id, step, str(RunStatus.RUNNING)]
    if unless_nudged_since is not None:
        params.append(adapt(unless_nudged_since))
    sql = _hand_over_sql(
        connection.vendor, wait_reason is not None, unless_nudged_since is not None
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount == 1


@cache
def _nudge_sql(vendor: str, by_node: bool) -> str:
    table = connection.ops.quote_name(Run._meta.db_table)
    nudged, status = _column("nudged_at"), _column("status")
    if by_node:
        marks = ", ".join(["%s"] * len(ACTIVE_RUN_STATUSES))
        where = f"{_column('node')} = %s AND {status} IN ({marks})"
    else:
        where = f"{_column('id')} = %s"
    returning = f"{_column('id')}, {_column('step')}, {status}"
    return f"UPDATE {table} SET {nudged} = %s WHERE {where} RETURNING {returning}"


def nudge_steps(
    *, now: datetime, run_id: int | None = None, node_id: int | None = None
) -> list[tuple[int, int, str]]:
    """Mark the run `run_id` (or the node's active runs) nudged at `now`; each run's id, step and
    status as this write left them. The row is written and read in one statement: a hand-over
    either came before it (its status says so) or sees the nudge (hand_over_step)."""
    if (run_id is None) == (node_id is None):
        raise ValueError("nudge_steps takes a run_id or a node_id")
    params: list = [connection.ops.adapt_datetimefield_value(now)]
    if node_id is not None:
        params += [node_id, *(str(s) for s in ACTIVE_RUN_STATUSES)]
    else:
        params.append(run_id)
    with connection.cursor() as cursor:
        cursor.execute(_nudge_sql(connection.vendor, node_id is not None), params)
        return [(int(pk), int(step), str(status)) for pk, step, status in cursor.fetchall()]


@cache
def _fields_of(model: type[Model]) -> dict[str, Field]:
    return {f.name: f for f in model._meta.concrete_fields}


@cache
def _fields_sql(vendor: str, model: type[Model], fields: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    columns = {name: field.column for name, field in _fields_of(model).items()}
    sets = ", ".join(f"{quote(columns[name])} = %s" for name in fields)
    return f"UPDATE {quote(model._meta.db_table)} SET {sets} WHERE {quote(columns['id'])} = %s"


def _write_fields(row: Model, fields: Iterable[str]) -> int:
    """Write `fields` of `row` as they are on it, each value prepared by its field as save
    prepares it; the number of rows written (0: the row is gone)."""
    names = tuple(fields)
    by_name = _fields_of(type(row))
    params = [
        field.get_db_prep_save(getattr(row, field.attname), connection)
        for field in (by_name[name] for name in names)
    ]
    params.append(row.pk)
    with connection.cursor() as cursor:
        cursor.execute(_fields_sql(connection.vendor, type(row), names), params)
        return cursor.rowcount


def write_record(record: PhaseRecord, fields: Iterable[str]) -> None:
    """Write `fields` of a phase record as they are on it: record.save(update_fields=fields).
    Raises DatabaseError, as save does, when the record's row is gone."""
    if _write_fields(record, fields) == 0:
        raise DatabaseError(f"phase record {record.pk} is gone: its fields were not written")


def write_run(run: Run, fields: Iterable[str]) -> bool:
    """Write `fields` of a run as they are on it, as Run.objects.filter(pk=...).update does (no
    error for a row that is gone); whether it wrote. A phase's start sets the run's current
    phase this way, some twenty times a run."""
    return _write_fields(run, fields) == 1
