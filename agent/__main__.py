"""Run the agent on a real node.

With no arguments it takes everything from the kernel command line that Greenlight's boot medium
set (`greenlight.url=`, `greenlight.credential=`, `greenlight.environment=`) and trusts the CA
baked into the image (/etc/greenlight/ca.pem). In the installed OS the credential is the one
os_install wrote into the install record on the boot disk. Flags override each value.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import ssl
import sys
from pathlib import Path

from . import boot_args, install_record
from .hardware import SystemHardware
from .runner import Agent, http_client


def main() -> None:
    parser = argparse.ArgumentParser(description="Greenlight's in-band agent")
    parser.add_argument("--greenlight", help="the agent API's base URL (https://...)")
    parser.add_argument("--environment", choices=["ephemeral", "host_os"])
    parser.add_argument("--credential", help="the boot credential (default: from the boot)")
    parser.add_argument("--ca-file", help="the CA that signed Greenlight's certificate")
    parser.add_argument("--boot-disk", help="the disk os_install writes (default: the first NVMe)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    booted = boot_args.read()
    url = args.greenlight or booted.url
    environment = args.environment or booted.environment
    credential = args.credential or booted.credential
    boot_disk = args.boot_disk
    if not credential and environment == "host_os":
        # os_install wrote it into the install record on the disk this OS booted from.
        found = install_record.host_credential()
        if found is not None:
            boot_disk, credential = boot_disk or found[0], found[1]
    if not url or not credential:
        sys.exit("no Greenlight URL or boot credential: boot from Greenlight's medium")
    ca_file = args.ca_file or booted.ca_file
    verify: ssl.SSLContext | bool = True
    if ca_file:
        verify = ssl.create_default_context(cafile=ca_file)
    boot_id_file = Path("/proc/sys/kernel/random/boot_id")
    boot_id = boot_id_file.read_text().strip() if boot_id_file.exists() else None

    async def serve() -> None:
        agent = Agent(
            SystemHardware(boot_disk=boot_disk),
            url,
            environment=environment,
            credential=credential,
            boot_id=boot_id,
            http=http_client(verify=verify),
        )
        await agent.start()
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
