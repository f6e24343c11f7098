"""Admitting a deployment's runs only while the workers keep up.

A deployment starts hundreds or thousands of runs at once, and each run holds its node in flight
for its whole length: its agent polls, its BMC session is kept, and every one of its steps waits
in the queue behind everyone else's. Started past what the workers can take, every node waits
longer for each step, its agent polls more meanwhile, and the workers' CPU a step grows with the
crowd: in the benchmark (5,000 lab nodes, speed 4, two cores) a node's next step came minutes
after its last, and a firmware look took 38 ms of CPU against 10 in the 741-node run.

So `start_runs` sends a run its first step only while the workers keep up: while the oldest
look sent and due is under GREENLIGHT_ADMISSION_LAG_S late, and, where an operator caps it,
while fewer than GREENLIGHT_MAX_RUNS_IN_FLIGHT runs are under way. The others stay QUEUED without
a look (`next_look_at` empty), saying why, and the sweep admits them in the order they were
started, GREENLIGHT_ADMISSION_BATCH a sweep, whenever the queue is short again. Ironic
(`[conductor] max_concurrent_deploy`) and Metal3 (`provisioningLimit`) cap a fixed number; the
lag finds the number the workers there are can take, and a fleet the workers keep up with is
never held back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Min, Q
from django.utils import timezone

from .choices import ACTIVE_RUN_STATUSES, RunStatus
from .models import Run
from .scheduling import kick_off, send_step


@dataclass(frozen=True)
class Room:
    """Whether new runs may start now, and if not, why (the words a held run shows)."""

    free: int | None  # how many may start (None: no cap, as many as are waiting)
    why_not: str = ""

    @property
    def any(self) -> bool:
        return not self.why_not and (self.free is None or self.free > 0)


def steps_behind_s(now: datetime | None = None) -> float:
    """Seconds the oldest look that was sent and is due has waited for a worker (0: none): a
    started run's first, a waiting run's next."""
    now = now or timezone.now()
    sent = Q(status=RunStatus.QUEUED) | Q(status=RunStatus.WAITING, dispatched_at__isnull=False)
    oldest = (
        Run.objects.filter(sent, next_look_at__lt=now)
        .aggregate(oldest=Min("next_look_at"))["oldest"]
    )  # fmt: skip
    return max((now - oldest).total_seconds(), 0.0) if oldest else 0.0


def in_flight() -> int:
    """Runs under way: active and admitted (a held run has no look yet)."""
    return Run.objects.filter(status__in=ACTIVE_RUN_STATUSES, next_look_at__isnull=False).count()


def room(now: datetime | None = None) -> Room:
    """How many held runs may start now."""
    # The words stay the same while the reason does: a sweep writes them on the held runs whose
    # words differ, and a lag in seconds would rewrite thousands of rows every sweep.
    lag_limit = settings.GREENLIGHT_ADMISSION_LAG_S
    if steps_behind_s(now) > lag_limit:
        return Room(
            0,
            f"waiting for the workers: their queue is over {lag_limit:g} s behind "
            "(GREENLIGHT_ADMISSION_LAG_S)",
        )
    cap = settings.GREENLIGHT_MAX_RUNS_IN_FLIGHT
    if not cap:
        return Room(None)
    under_way = in_flight()
    if under_way >= cap:
        return Room(0, f"waiting for a slot: {cap} runs under way (GREENLIGHT_MAX_RUNS_IN_FLIGHT)")
    return Room(cap - under_way)


def start_or_hold(run: Run) -> bool:
    """Send a new run its first step if the workers keep up and no run started earlier is held,
    or hold it QUEUED without a look, saying why; True if it started. Called inside the
    transaction that created the run."""
    space = room()
    # Runs start in the order they were started: one held earlier (by this deployment or
    # another) goes first, when the sweep finds room, even if the queue is short right now.
    if space.any and not _held().exclude(pk=run.pk).exists():
        kick_off(run)
        return True
    why = space.why_not or "waiting for its turn: runs started earlier are held for the workers"
    Run.objects.filter(pk=run.pk).update(wait_reason=why[:300])
    run.wait_reason = why[:300]
    return False


def _held():
    return Run.objects.filter(status=RunStatus.QUEUED, next_look_at__isnull=True)


def admit_held_runs(*, now: datetime | None = None) -> int:
    """Start the held runs there is room for, the oldest first, at most
    GREENLIGHT_ADMISSION_BATCH; return how many (the sweep calls this)."""
    now = now or timezone.now()
    space = room(now)
    waiting = _held()
    if not space.any:
        # Say why on every held run, once: a run page shows the lag it waits for.
        if space.why_not:
            waiting.exclude(wait_reason=space.why_not[:300]).update(wait_reason=space.why_not[:300])
        return 0
    batch = settings.GREENLIGHT_ADMISSION_BATCH
    if space.free is not None:
        batch = min(batch, space.free)
    chosen = list(waiting.order_by("created_at", "pk").values_list("pk", flat=True)[:batch])
    if not chosen:
        return 0
    # The conditional UPDATE is the claim: of two sweeps at once only one admits a run; read
    # back by its mark, as dispatch_due does.
    waiting.filter(pk__in=chosen).update(next_look_at=now, dispatched_at=now, wait_reason="")
    admitted = list(
        Run.objects.filter(pk__in=chosen, status=RunStatus.QUEUED, next_look_at=now)
        .values_list("pk", "step")
    )  # fmt: skip
    for run_id, step in admitted:
        send_step(run_id, step)
    return len(admitted)
