"""Kombu's Redis transports, with a worker that lives through losing its broker.

When a worker's broker connection breaks, Celery 5.7 collects the connection (which lets go of
the transport's client) and then closes it; the close restores the messages the worker holds
unacknowledged (tasks under way, looks due later) through a pool built from that client, which
is gone: AttributeError, which the close does not ignore, and the worker exits ("Unrecoverable
error"). Any worker holding a message when a Redis master died went down with it (kombu 5.7.0,
redis:// and sentinel:// alike; tests/ha/test_redis_failover.py shows it).

Here the channel says the broker is gone with a connection error, which the close ignores, and
the worker reconnects. The messages stay in Redis's unacknowledged set, which kombu restores
once the visibility timeout passes; a run's step that waits longer is re-sent by the sweep.

What it buys: in tests/ha/test_control_plane_failover.py both workers (2 of 2) exited at the
Redis failover without it, and none does with it. It overrides kombu's private `_connparams`;
tests/test_private_api_tripwires.py fails on a kombu upgrade so it is read again then.
"""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class _KnowsItsClientIsGone:
    """A channel that refuses to build a pool once its connection has let go of its client."""

    connection: kombu_redis.Transport

    def _connparams(self, asynchronous: bool = False):
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)  # type: ignore[misc]


class Channel(_KnowsItsClientIsGone, kombu_redis.Channel):
    """kombu's Redis channel, for redis:// brokers."""


class SentinelChannel(_KnowsItsClientIsGone, kombu_redis.SentinelChannel):
    """kombu's Sentinel channel, for sentinel:// brokers."""


class Transport(kombu_redis.Transport):
    Channel = Channel


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel


def register() -> None:
    """Make the redis://, rediss:// and sentinel:// schemes name these transports.

    By scheme, not by Celery's broker_transport: a connection that fails over to another of
    the broker URLs (another sentinel) takes that URL's scheme's transport.
    """
    TRANSPORT_ALIASES.update(
        {
            "redis": f"{__name__}:Transport",
            "rediss": f"{__name__}:Transport",
            "sentinel": f"{__name__}:SentinelTransport",
        }
    )
