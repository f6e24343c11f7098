"""The garbage collector set for a long-running server process: a worker or a web server.

After start-up a process holds some 165,000 objects that live as long as it does (Django's
models, URL patterns and templates, Celery's app, the modules), and CPython's collector walked
them all on every full collection: 0.11 s each on this machine. Frozen once the process is
ready (gc.freeze, the public call CPython offers for this), they are out of every collection.
The young generation's threshold is raised from Python's 700 so that a step's or a request's
containers are mostly freed by their reference counts before a collection looks at them. In the
150-node benchmark (docs/benchmarks.md) the workers collected 774 times instead of 3,943, fully
6 times instead of 20, and the collector's CPU fell from 0.107 to 0.037 s a node (the web
servers' from 0.023 to 0.004 s).
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
