"""Reads compiled to SQL once per thread, for the few the engine makes on every step.

Django compiles a queryset to SQL each time it is evaluated. For the reads every engine step
makes (the run with its node and rack, the run's next phase) compiling cost four times what the
database did: 1.1 of 1.36 ms of CPU for the run's read, measured on PostgreSQL. A PreparedRead
builds its queryset once, with placeholder arguments, keeps the compiled SQL and Django's own
recipe for turning rows into instances (select_related ones included), and then only swaps the
arguments in. What it returns is what the queryset would have returned.

Arguments must be integers (ids, step numbers): each placeholder is found in the compiled
parameters by its value, so it has to reach them unchanged.

It reads compiler internals (klass_info, get_related_populators, apply_converters):
tests/test_private_api_tripwires.py fails on any Django upgrade, so that the upgrade re-reads
them; tests/provisioning/test_prepared_reads.py compares every result with the ORM's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators

M = TypeVar("M", bound=Model)

# Placeholders must be told apart from the query's own parameters, and stay in the range of the
# smallest positive integer column (Django compiles an out-of-range lookup to "matches nothing").
PLACEHOLDER_BASE = 2_147_480_001


@dataclass
class _Compiled:
    db: str
    sql: str
    params: list[Any]
    slots: list[tuple[int, int]]  # (position in params, index of the argument that goes there)
    compiler: Any
    model: type[Model]
    start: int
    end: int
    init_list: list[str]
    populators: list[Any]
    converters: dict


class PreparedRead(Generic[M]):
    """A queryset of model instances, compiled once per thread and database."""

    def __init__(self, build: Callable[..., QuerySet[M]]):
        self.build = build
        self._local = threading.local()

    def all(self, *args: int) -> list[M]:
        """The instances the queryset built from `args` would give."""
        for arg in args:
            if not isinstance(arg, int) or isinstance(arg, bool):
                raise TypeError(f"a PreparedRead takes integer arguments, not {arg!r}")
        compiled = self._compiled(len(args))
        params = list(compiled.params)
        for position, index in compiled.slots:
            params[position] = args[index]
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
            out.append(obj)
        return out

    def first(self, *args: int) -> M | None:
        """The first instance, or None (build the queryset with a slice: no LIMIT is added)."""
        found = self.all(*args)
        return found[0] if found else None

    def _compiled(self, arity: int) -> _Compiled:
        compiled = getattr(self._local, "compiled", None)
        # What was compiled belongs to this thread's connection object: a new one, a new compile.
        if compiled is None or connections[compiled.db] is not compiled.compiler.connection:
            compiled = self._local.compiled = self._compile(arity)
        return compiled

    def _compile(self, arity: int) -> _Compiled:
        placeholders = [PLACEHOLDER_BASE + i for i in range(arity)]
        queryset = self.build(*placeholders)
        if queryset._iterable_class is not ModelIterable or queryset._prefetch_related_lookups:
            raise ValueError("a PreparedRead reads plain model instances, without prefetches")
        if queryset._known_related_objects or queryset.query.annotation_select:
            raise ValueError("a PreparedRead reads no related managers' or annotated querysets")
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        slots = [
            (position, placeholders.index(value))
            for position, value in enumerate(params)
            if isinstance(value, int) and value in placeholders
        ]
        missing = set(range(arity)) - {index for _, index in slots}
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
        )
