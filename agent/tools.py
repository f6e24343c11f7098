"""Running the node's tools: one seam through which every command of the hardware layer passes.

`capture` runs a short query tool and keeps stdout and stderr apart (nvme-cli prints warnings on
stderr ahead of its JSON); `run` streams a long job's merged output to the command's log. A tool
that is not installed answers 127, as a shell would, so a node without nvidia-smi or
mlxfwmanager inventories no GPUs or no Mellanox devices instead of crashing.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

Log = Callable[[str], None]


@dataclass(frozen=True)
class Completed:
    """A finished query: exit code, stdout, stderr."""

    code: int
    stdout: str
    stderr: str = ""


Capture = Callable[[list[str]], Awaitable[Completed]]
Run = Callable[..., Awaitable[tuple[int, str]]]
NOT_FOUND = 127


async def capture(cmd: list[str], timeout: float = 120.0) -> Completed:
    """Run a query tool to completion; stdout and stderr kept apart."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
    except FileNotFoundError:
        return Completed(NOT_FOUND, "", f"{cmd[0]}: command not found")
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return Completed(
        proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")
    )


async def run(
    cmd: list[str], log: Log | None = None, timeout: float | None = None
) -> tuple[int, str]:
    """Run a command, streaming its output to `log`; return (exit code, output)."""
    if log:
        log("$ " + shlex.join(cmd))
    try:
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
    except FileNotFoundError:
        message = f"{cmd[0]}: command not found"
        if log:
            log(message)
        return NOT_FOUND, message
    lines: list[str] = []
    assert proc.stdout is not None

    async def pump() -> None:
        async for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            lines.append(line)
            if log:
                log(line)

    await asyncio.wait_for(pump(), timeout)
    return await proc.wait(), "\n".join(lines)
