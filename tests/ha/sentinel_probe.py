"""A long-lived Greenlight client for the Sentinel failover test, run as a child process.

With REDIS_SENTINELS in its environment it answers each line on stdin with one round trip
through each part that takes a Redis: the cache, the channel layer and the broker (a task sent
to the queue and a ping every worker answers). One JSON line per round, on stdout. A line
starting "hold" sends a task due later instead, which the worker holds unacknowledged.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")
django.setup()

from channels.layers import get_channel_layer  # noqa: E402  (after django.setup())
from django.core.cache import cache  # noqa: E402

from greenlight.celery import app  # noqa: E402


async def live_round_trip(layer, key: str) -> str:
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "probe", "key": key})
    message = await asyncio.wait_for(layer.receive(channel), 10)
    return message["key"]


def one_round(key: str, loop: asyncio.AbstractEventLoop) -> dict:
    answer: dict = {"key": key}
    try:
        cache.set("sentinel-probe", key, 60)
        answer["cache"] = cache.get("sentinel-probe")
    except Exception as exc:  # the test reads the error; a probe that dies says nothing
        answer["cache_error"] = repr(exc)
    try:
        answer["live"] = loop.run_until_complete(live_round_trip(get_channel_layer(), key))
    except Exception as exc:
        answer["live_error"] = repr(exc)
    try:
        app.send_task("celery.accumulate", (key,))
        answer["workers"] = sorted(n for reply in app.control.ping(timeout=3) for n in reply)
    except Exception as exc:
        answer["broker_error"] = repr(exc)
    return answer


def hold(key: str) -> dict:
    """A task due in two minutes: until then the worker holds its message unacknowledged, as
    it holds a run's next look."""
    app.send_task("celery.accumulate", (key,), countdown=120)
    return {"key": key, "held": True}


def main() -> None:
    loop = asyncio.new_event_loop()
    for line in sys.stdin:
        key = line.strip()
        answer = hold(key) if key.startswith("hold") else one_round(key, loop)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
