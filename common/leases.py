"""Named leases in the database: one holder at a time, taken over only once it lapses.

Every change is a compare-and-set on the row (an UPDATE filtered on what was read), and the first
claim an INSERT that the unique name lets only one process make: the same on SQLite and
PostgreSQL, with no lock held between statements. Times are the callers' clocks, which the
deployment keeps in step (NTP), as it does for the runs' own leases; a lease is long against any
skew it tolerates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from .models import Lease


@dataclass(frozen=True)
class LeaseState:
    """Who holds a lease and until when, as one claim found it."""

    held: bool  # whether the caller holds it now
    holder: str
    expires_at: datetime
    taken_from: str = ""  # whose lapsed lease the caller just took over, if it did


def hold(name: str, holder: str, lease_s: float, *, now: datetime | None = None) -> LeaseState:
    """Take lease `name` for `holder`, or renew it, for `lease_s` seconds from `now`.

    A lease another holds is taken over only once it has lapsed; otherwise the answer says who
    holds it and until when.
    """
    now = now or timezone.now()
    expires_at = now + timedelta(seconds=lease_s)
    current = _read(name)
    if current is None:
        try:
            # A savepoint: inside a caller's transaction, a lost race must not spoil it.
            with transaction.atomic():
                Lease.objects.create(
                    name=name, holder=holder, expires_at=expires_at, acquired_at=now
                )
        except IntegrityError:
            return _not_held(name, holder, now)  # another process made the row first
        return LeaseState(True, holder, expires_at)
    was_holder, was_until = current
    if was_holder == holder:
        renewed = Lease.objects.filter(name=name, holder=holder).update(expires_at=expires_at)
        return LeaseState(True, holder, expires_at) if renewed else _not_held(name, holder, now)
    if was_until >= now:
        return LeaseState(False, was_holder, was_until)
    # Lapsed: taken only from the holder and expiry read above. A renewal or another taker in
    # between changed one of them, and this updates nothing.
    taken = Lease.objects.filter(name=name, holder=was_holder, expires_at=was_until).update(
        holder=holder, expires_at=expires_at, acquired_at=now
    )
    if not taken:
        return _not_held(name, holder, now)
    return LeaseState(True, holder, expires_at, taken_from=was_holder)


def release(name: str, holder: str, *, now: datetime | None = None) -> bool:
    """End `holder`'s lease now, so another takes it at once; False if it held none."""
    now = now or timezone.now()
    return bool(Lease.objects.filter(name=name, holder=holder).update(expires_at=now))


def _read(name: str) -> tuple[str, datetime] | None:
    rows = Lease.objects.filter(name=name).values_list("holder", "expires_at").order_by()[:1]
    return next(iter(rows), None)


def _not_held(name: str, holder: str, now: datetime) -> LeaseState:
    """The state after a lost race: whoever won holds it."""
    current = _read(name)
    if current is None:  # removed meanwhile by hand: nobody holds it, the next claim takes it
        return LeaseState(False, "", now)
    return LeaseState(current[0] == holder, current[0], current[1])
