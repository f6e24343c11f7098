"""The garbage collector set for a long-running server process: a worker or a web server.

After start-up a process holds some 165,000 objects that live as long as it does (Django's
models, URL patterns and templates, Celery's app, the modules), and CPython's collector walked
them all on every full collection: 0.11 s each on this machine, over a hundred times a run in
each worker of the 741-node benchmark. Frozen once the process has started (gc.freeze, the
public call CPython offers for exactly this), a full collection walks only what the work made.
The young generation's threshold is raised from Python's 700 because a step or a request makes
thousands of short-lived containers: at 700 a worker collected 22,000 times in that run, most of
them for objects that a few microseconds later were freed by their reference counts anyway.
"""

from __future__ import annotations

import gc


def settle_long_lived_objects(young_threshold: int) -> None:
    """Freeze what start-up made and collect the young generation every `young_threshold`
    allocations; call once, when the process is ready to serve."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(young_threshold, middle, old)
