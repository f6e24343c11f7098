"""The lab's artifact server: firmware and OS images, named `<component>-<version>.bin`.

Every artifact's content is derived from its name, so a manifest can state its sha256 up front
(`artifact_sha256`). A node with the `download_blip` fault has its first download cut mid-way,
the way a busy hall's network sometimes does; the agent must retry, and verify what it got.
"""

from __future__ import annotations

import hashlib

from aiohttp import web

from .node import LabNode

CHUNK = 64 * 1024
# Real images are large; the lab's are padded to a size worth streaming, not to gigabytes.
PADDING = 256 * 1024


def artifact_bytes(name: str) -> bytes:
    """The content of the artifact called `name` (for example bmc-7.10.30.00.bin)."""
    stem = name.rsplit(".", 1)[0]
    component, _, version = stem.partition("-")
    head = f"greenlight-lab-artifact {component} {version}\n".encode()
    return head + hashlib.sha256(head).digest() * (PADDING // 32)


def artifact_sha256(name: str) -> str:
    return hashlib.sha256(artifact_bytes(name)).hexdigest()


class ArtifactServer:
    """An aiohttp app serving artifacts to lab agents and to Greenlight."""

    def __init__(self, nodes_by_address: dict[str, LabNode]):
        self.nodes_by_address = nodes_by_address
        self.downloads: dict[str, int] = {}

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/artifacts/{name}", self.serve)
        return app

    async def serve(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if "/" in name or ".." in name:
            raise web.HTTPNotFound()
        body = artifact_bytes(name)
        peer = (
            (request.transport.get_extra_info("peername") or ("", 0))[0]
            if request.transport
            else ""
        )
        self.downloads[name] = self.downloads.get(name, 0) + 1
        node = self.nodes_by_address.get(peer)
        response = web.StreamResponse(headers={"Content-Length": str(len(body))})
        await response.prepare(request)
        if node is not None and node.faults.consume("download_blip"):
            await response.write(body[: len(body) // 3])
            request.transport.close()  # the blip: the connection drops mid-body
            return response
        for start in range(0, len(body), CHUNK):
            await response.write(body[start : start + CHUNK])
        await response.write_eof()
        return response
