"""Redis behind Sentinel, for the parts that take a Redis: the broker, the channel layer, the
cache. Each asks the sentinels where the master is, and asks again after a failover.

Celery (kombu) and channels_redis read sentinels from their own settings; Django's cache takes
a connection pool class with `from_url`, which this module gives it (`SentinelPool`), with the
sentinels and master written into the cache's LOCATION as `sentinel_location` spells it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from redis.sentinel import Sentinel, SentinelConnectionPool

SCHEME = "sentinel"


# Django's RedisCache splits a LOCATION at commas and semicolons into servers of their own.
LOCATION_SEPARATOR = "|"


def sentinel_location(sentinels: list[tuple[str, int]], master: str, db: int = 0) -> str:
    """The cache LOCATION for these sentinels: sentinel://h1:p1|h2:p2/MASTER/DB."""
    hosts = LOCATION_SEPARATOR.join(f"{host}:{port}" for host, port in sentinels)
    return f"{SCHEME}://{hosts}/{master}/{db}"


def parse_location(location: str) -> tuple[list[tuple[str, int]], str, int]:
    """The sentinels, master name and database a sentinel_location names."""
    parts = urlsplit(location)
    if parts.scheme != SCHEME:
        raise ValueError(f"{location!r} is not a {SCHEME}:// location")
    sentinels = []
    for item in parts.netloc.split(LOCATION_SEPARATOR):
        host, _, port = item.rpartition(":")
        sentinels.append((host, int(port)))
    master, _, db = parts.path.strip("/").partition("/")
    if not master:
        raise ValueError(f"{location!r} names no master")
    return sentinels, master, int(db or 0)


def broker_url(sentinels: list[tuple[str, int]], db: int = 0) -> str:
    """Kombu's spelling: one sentinel:// URL per sentinel, joined by semicolons (the master's
    name goes into the transport options)."""
    return ";".join(f"{SCHEME}://{host}:{port}/{db}" for host, port in sentinels)


def channel_layer_host(
    sentinels: list[tuple[str, int]], master: str, db: int = 0, **options: Any
) -> dict[str, Any]:
    """channels_redis's spelling of a host behind sentinels."""
    return {"sentinels": list(sentinels), "master_name": master, "db": db, **options}


class SentinelPool:
    """A pool class for Django's RedisCache: `from_url` on a sentinel_location gives a pool
    that finds the master through the sentinels, and finds it again after a failover."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SentinelConnectionPool:
        sentinels, master, db = parse_location(url)
        timeout = options.get("socket_timeout", 1.0)
        manager = Sentinel(sentinels, socket_timeout=timeout)
        return SentinelConnectionPool(master, manager, db=db, **options)
