"""gunicorn's settings for the node plane (greenlight/node_wsgi.py), for the lab and a site alike:

    gunicorn -c python:greenlight.node_gunicorn -b 0.0.0.0:8001 greenlight.node_wsgi:application

Options given on the command line win over these.
"""

from __future__ import annotations

import resource

from agent.protocol import KEEPALIVE_S
from common.env import env_int, problems

# Threads, not processes: an agent's request waits on the database, not the CPU; one worker, so
# the process's database pool (GREENLIGHT_DB_POOL) is the only one.
worker_class = "gthread"
workers = 1
threads = 8
# Agents report every few seconds to a minute apart and keep their connection 90 s between
# polls (agent/protocol.py): kept longer here, it is not set up again for each poll, and the
# server never closes one under an agent's request.
keepalive = int(KEEPALIVE_S) + 15

# Every agent of the hall holds a connection between its polls, and gthread counts each against
# worker_connections (gunicorn's default 1,000). Once they reach it, gunicorn 23's loop stops
# reading requests and spins a core until a kept connection times out (gunicorn issue #3407): a
# hall of over a thousand nodes, or agents reconnecting while their old connection lingered,
# stalls every agent and boot. Room for the largest hall, with its boot-media downloads.
worker_connections = env_int("GREENLIGHT_NODE_PLANE_CONNECTIONS", 10_000, minimum=64)
if problems():
    raise SystemExit("; ".join(problems().values()))

# Each connection is a file descriptor; the usual soft limit (1,024) would refuse them first.
FILES_BEYOND_CONNECTIONS = 256


def on_starting(server) -> None:
    """Raise the open-files limit to what worker_connections needs, as far as the hard limit
    allows (the worker inherits it), and say so when it cannot."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = worker_connections + FILES_BEYOND_CONNECTIONS
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
    if ceiling < wanted:
        server.log.warning(
            "open-files limit %d is below the %d that %d connections need: raise it (ulimit -n)",
            ceiling, wanted, worker_connections,
        )  # fmt: skip
