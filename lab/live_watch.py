"""A WebSocket client watching racks, as a browser would: its own process, no Django.

The benchmark runs it as a child process, so the moment a batch arrives is stamped by a process
that shares no interpreter lock with the lab's simulated BMCs and agents. It writes one JSON line
per batch (`{"at": <unix time>, "batch": {...}}`) to the output file until SIGTERM.

    python -m lab.live_watch --url http://127.0.0.1:8000 --cookie SESSIONID --out FILE RACK_ID...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time


async def watch(url: str, cookie: str, racks: list[int], out, ready) -> None:
    import aiohttp

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    port = url.rsplit(":", 1)[1]
    headers = {"Origin": f"http://127.0.0.1:{port}", "Cookie": f"sessionid={cookie}"}
    base = url.replace("http://", "ws://")

    async def read(ws) -> None:
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.TEXT:
                out.write(json.dumps({"at": time.time(), "batch": json.loads(msg.data)}) + "\n")

    async with aiohttp.ClientSession() as http:
        sockets = [
            await http.ws_connect(f"{base}/ws/rack/{rack}/", headers=headers, heartbeat=30)
            for rack in racks
        ]
        ready()
        readers = [asyncio.ensure_future(read(ws)) for ws in sockets]
        await stop.wait()
        for ws in sockets:
            await ws.close()
        await asyncio.gather(*readers, return_exceptions=True)
    out.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--cookie", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("racks", type=int, nargs="+")
    args = parser.parse_args(argv)
    with open(args.out, "w") as out:

        def ready() -> None:
            # The parent waits for this line before it starts the runs.
            sys.stdout.write("ready\n")
            sys.stdout.flush()

        asyncio.run(watch(args.url, args.cookie, args.racks, out, ready))


if __name__ == "__main__":
    main()
