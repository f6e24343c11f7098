"""Run the agent on a real node: `python -m agent --greenlight URL [--environment ...]`."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from .hardware import SystemHardware
from .runner import Agent


def main() -> None:
    parser = argparse.ArgumentParser(description="Greenlight's in-band agent")
    parser.add_argument("--greenlight", required=True, help="Greenlight's base URL")
    parser.add_argument("--environment", choices=["ephemeral", "host_os"], default="ephemeral")
    parser.add_argument("--listen", default="0.0.0.0:9999", help="host:port to serve on")
    parser.add_argument("--advertise", help="the address Greenlight should call back")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    host, _, port = args.listen.rpartition(":")
    boot_id_file = Path("/proc/sys/kernel/random/boot_id")
    boot_id = boot_id_file.read_text().strip() if boot_id_file.exists() else None

    async def serve() -> None:
        agent = Agent(
            SystemHardware(),
            args.greenlight,
            environment=args.environment,
            listen_host=host,
            listen_port=int(port),
            advertise_host=args.advertise,
            boot_id=boot_id,
        )
        await agent.start()
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
