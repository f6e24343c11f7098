"""WebSocket consumers: authenticate, join a group, forward events."""

from __future__ import annotations

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from .live import FLEET_GROUP, node_group, rack_group, site_group


class LiveConsumer(AsyncJsonWebsocketConsumer):
    """Streams the events of one rack, site, node, or the whole fleet to a signed-in browser."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            # 4401: an application close code; browsers see it and go to the login page.
            await self.close(code=4401)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        scope, ident = kwargs.get("scope"), kwargs.get("ident")
        groups = {
            "rack": lambda: rack_group(int(ident)),
            "site": lambda: site_group(int(ident)),
            "node": lambda: node_group(int(ident)),
            "fleet": lambda: FLEET_GROUP,
        }
        self.group = groups[scope]()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        group = getattr(self, "group", None)
        if group:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def live_event(self, message: dict) -> None:
        await self.send_json({"type": "event", **message["event"]})
