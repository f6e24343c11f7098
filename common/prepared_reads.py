"""Reads compiled to SQL once per thread, for the few the engine makes on every step.

Django compiles a queryset to SQL each time it is evaluated. For the reads every engine step
makes (the run with its node and rack, the run's next phase) compiling cost four times what the
database did: 1.1 of 1.36 ms of CPU for the run's read, measured on PostgreSQL. A PreparedRead
builds its queryset once, with placeholder arguments, keeps the compiled SQL and Django's own
recipe for turning rows into instances (select_related ones included), and then only swaps the
arguments in. What it returns is what the queryset would have returned.

Arguments are integers (ids, step numbers), strings (a token's hash) or aware datetimes (a
window's start): each placeholder is found in the compiled parameters by its value, so it has to
reach them unchanged (a datetime as the database's adaptation of it). Annotations come back as
the queryset's do, as attributes of each instance.

It reads compiler internals (klass_info, annotation_col_map, get_related_populators,
apply_converters):
tests/test_private_api_tripwires.py fails on any Django upgrade, so that the upgrade re-reads
them; tests/provisioning/test_prepared_reads.py compares every result with the ORM's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators

M = TypeVar("M", bound=Model)

# Placeholders must be told apart from the query's own parameters, and stay in the range of the
# smallest positive integer column (Django compiles an out-of-range lookup to "matches nothing").
PLACEHOLDER_BASE = 2_147_480_001
STRING_PLACEHOLDER = "greenlight-prepared-read-argument-{}"
# A moment no real argument names, one microsecond apart per argument.
DATETIME_PLACEHOLDER = datetime(1907, 3, 5, 7, 11, 13, tzinfo=UTC)
ARGUMENT_KINDS = (int, str, datetime)


def _kind(arg: Any) -> type:
    if isinstance(arg, bool) or not isinstance(arg, ARGUMENT_KINDS):
        raise TypeError(f"a PreparedRead takes integer, string or datetime arguments, not {arg!r}")
    if isinstance(arg, datetime) and arg.tzinfo is None:
        raise TypeError(f"a PreparedRead takes aware datetimes, not {arg!r}")
    return next(kind for kind in ARGUMENT_KINDS if isinstance(arg, kind))


def _placeholder(kind: type, index: int) -> Any:
    if kind is int:
        return PLACEHOLDER_BASE + index
    if kind is str:
        return STRING_PLACEHOLDER.format(index)
    return DATETIME_PLACEHOLDER.replace(microsecond=index)


@dataclass
class _Compiled:
    db: str
    sql: str
    params: list[Any]
    # (position in params, index of the argument that goes there, how the database adapts it)
    slots: list[tuple[int, int, Callable[[Any], Any]]]
    compiler: Any
    model: type[Model]
    start: int
    end: int
    init_list: list[str]
    populators: list[Any]
    converters: dict
    annotations: dict[str, int]  # attribute name -> position in the row


class PreparedRead(Generic[M]):
    """A queryset of model instances, compiled once per thread and database."""

    def __init__(self, build: Callable[..., QuerySet[M]]):
        self.build = build
        self._local = threading.local()

    def all(self, *args: int | str | datetime) -> list[M]:
        """The instances the queryset built from `args` would give."""
        compiled = self._compiled(tuple(_kind(arg) for arg in args))
        params = list(compiled.params)
        for position, index, adapt in compiled.slots:
            params[position] = adapt(args[index])
        db = compiled.db
        with connections[db].cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if compiled.converters:
            rows = compiled.compiler.apply_converters(rows, compiled.converters)
        out = []
        for row in rows:
            obj = compiled.model.from_db(db, compiled.init_list, row[compiled.start : compiled.end])
            for populator in compiled.populators:
                populator.populate(row, obj)
            for name, position in compiled.annotations.items():
                setattr(obj, name, row[position])
            out.append(obj)
        return out

    def first(self, *args: int | str | datetime) -> M | None:
        """The first instance, or None (build the queryset with a slice: no LIMIT is added)."""
        found = self.all(*args)
        return found[0] if found else None

    def _compiled(self, kinds: tuple[type, ...]) -> _Compiled:
        compiled = getattr(self._local, "compiled", {}).get(kinds)
        # What was compiled belongs to this thread's connection object: a new one, a new compile.
        if compiled is None or connections[compiled.db] is not compiled.compiler.connection:
            compiled = self._compile(kinds)
            self._local.compiled = {**getattr(self._local, "compiled", {}), kinds: compiled}
        return compiled

    def _compile(self, kinds: tuple[type, ...]) -> _Compiled:
        placeholders = [_placeholder(kind, i) for i, kind in enumerate(kinds)]
        queryset = self.build(*placeholders)
        if queryset._iterable_class is not ModelIterable or queryset._prefetch_related_lookups:
            raise ValueError("a PreparedRead reads plain model instances, without prefetches")
        if queryset._known_related_objects:
            raise ValueError("a PreparedRead reads no related managers' querysets")
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        slots = self._slots(params, placeholders, compiler.connection)
        missing = set(range(len(kinds))) - {index for _, index, _ in slots}
        if missing:
            raise ValueError(f"arguments {sorted(missing)} did not reach the compiled query")
        select, klass_info = compiler.select, compiler.klass_info
        fields = klass_info["select_fields"]
        start, end = fields[0], fields[-1] + 1
        return _Compiled(
            db=queryset.db,
            sql=sql,
            params=list(params),
            slots=slots,
            compiler=compiler,
            model=klass_info["model"],
            start=start,
            end=end,
            init_list=[f[0].target.attname for f in select[start:end]],
            populators=get_related_populators(klass_info, select, queryset.db),
            converters=compiler.get_converters([s[0] for s in select[: compiler.col_count]]),
            annotations=dict(compiler.annotation_col_map or {}),
        )

    @staticmethod
    def _slots(params, placeholders: list[Any], connection) -> list[tuple[int, int, Callable]]:
        """Where each placeholder reached the compiled parameters, and how it was adapted there
        (a datetime is the backend's adaptation of it: a string on SQLite)."""
        found = []
        for position, value in enumerate(params):
            for index, placeholder in enumerate(placeholders):
                if isinstance(placeholder, datetime):
                    adapt = connection.ops.adapt_datetimefield_value
                    if value == placeholder or value == adapt(placeholder):
                        found.append((position, index, adapt if value != placeholder else _same))
                        break
                # isinstance: PostgreSQL's compiler may wrap an integer (psycopg's Int4).
                elif isinstance(value, type(placeholder)) and value == placeholder:
                    found.append((position, index, _same))
                    break
        return found


def _same(value: Any) -> Any:
    return value
