"""WebSocket consumers: authenticate, join a group, forward events (coalesced)."""

from __future__ import annotations

import asyncio
import contextlib

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.conf import settings

from fleet.live import FLEET_GROUP, Coalescer, node_group, rack_group, site_group
from fleet.models import Node, Rack, Site

VIEW_PERM = "fleet.view_node"
# Application close codes, sent before the socket is accepted: the page reloads on 4401/4403.
CLOSE_NOT_SIGNED_IN = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
SCOPED_MODELS = {"rack": Rack, "site": Site, "node": Node}


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Refuses a socket on a path that names nothing: not found, not a server error."""

    async def connect(self) -> None:
        await self.close(code=CLOSE_NOT_FOUND)


def _exists(scope: str, ident: int) -> bool:
    return SCOPED_MODELS[scope].objects.filter(pk=ident).exists()


class LiveConsumer(AsyncJsonWebsocketConsumer):
    """Streams the changes of one rack, site, node, or the whole fleet to a signed-in browser.

    Events are folded per node and sent at most once per GREENLIGHT_LIVE_COALESCE_MS, so a busy
    site never floods a browser; the first change after a quiet window goes out at once. Each
    batch carries the newest event id as its sequence number.
    """

    group: str | None = None
    flush_task: asyncio.Task | None = None
    last_sent: float = float("-inf")

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            # The page reloads and login_required takes over.
            await self.close(code=CLOSE_NOT_SIGNED_IN)
            return
        if not await database_sync_to_async(user.has_perm)(VIEW_PERM):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        scope = kwargs["scope"]
        if scope == "fleet":
            self.group = FLEET_GROUP
        else:
            ident = int(kwargs["ident"])
            if not await database_sync_to_async(_exists)(scope, ident):
                await self.close(code=CLOSE_NOT_FOUND)
                return
            groups = {"rack": rack_group, "site": site_group, "node": node_group}
            self.group = groups[scope](ident)
        self.buffer = Coalescer()
        self.window = settings.GREENLIGHT_LIVE_COALESCE_MS / 1000
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.flush_task is not None:
            self.flush_task.cancel()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def dispatch(self, message: dict) -> None:
        # Channels closes stale database connections before every handler, through a hop to
        # its one shared sync thread and back. Live batches touch no database and arrive
        # hundreds a second in a bring-up: that hop was a tenth of the web process's CPU and
        # queued every socket's batches behind one thread.
        if message["type"] == "live.events":
            await self.live_events(message)
            return
        await super().dispatch(message)

    async def live_events(self, message: dict) -> None:
        for event in message["events"]:
            self.buffer.add(event)
        if self.flush_task is not None:
            return  # a batch is already due: these events ride with it
        wait = self.last_sent + self.window - asyncio.get_running_loop().time()
        if wait <= 0:
            # Quiet until now: send at once, so a lone change reaches the browser without delay.
            await self._send_batch()
        else:
            self.flush_task = asyncio.ensure_future(self._flush_after(wait))

    async def _flush_after(self, wait: float) -> None:
        # A timer, not a wait on work: at most one batch per window, however busy the site.
        await asyncio.sleep(wait)
        self.flush_task = None
        await self._send_batch()

    async def _send_batch(self) -> None:
        self.last_sent = asyncio.get_running_loop().time()
        batch = self.buffer.take()
        if batch is not None:
            with contextlib.suppress(Exception):
                await self.send_json(batch)
