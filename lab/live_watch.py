"""A WebSocket client watching racks, as a browser would: its own process, no Django.

The benchmark runs it as a child process, so the moment a batch arrives is stamped by a process
that shares no interpreter lock with the lab's simulated BMCs and agents. It writes one JSON line
per batch (`{"at": <unix time>, "batch": {...}}`) to the output file until SIGTERM. A socket
the server closes is reconnected, as the page does, and written as `{"at": ..., "closed": rack}`:
the benchmark counts them, since a batch that never came cannot be timed.

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

    async def follow(http, rack: int, first) -> None:
        ws = first
        while True:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.TEXT:
                    batch = json.loads(msg.data)
                    out.write(json.dumps({"at": time.time(), "batch": batch}) + "\n")
            if stop.is_set():
                return
            out.write(json.dumps({"at": time.time(), "closed": rack}) + "\n")
            while not stop.is_set():
                try:
                    ws = await connect(http, rack)
                    break
                except aiohttp.ClientError:
                    await asyncio.sleep(1.0)  # the page's own back-off before it tries again
            else:
                return

    def connect(http, rack: int):
        return http.ws_connect(f"{base}/ws/rack/{rack}/", headers=headers, heartbeat=30)

    async with aiohttp.ClientSession() as http:
        sockets = [await connect(http, rack) for rack in racks]
        ready()
        followers = [
            asyncio.ensure_future(follow(http, rack, ws))
            for rack, ws in zip(racks, sockets, strict=True)
        ]
        await stop.wait()
        for ws in sockets:
            await ws.close()
        for follower in followers:
            follower.cancel()
        await asyncio.gather(*followers, return_exceptions=True)
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
