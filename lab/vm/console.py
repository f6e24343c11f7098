"""Reading a VM's serial console log: what the guest's init and agent printed."""

from __future__ import annotations

import time
from pathlib import Path

AGENT_STARTED = "greenlight-init: starting agent"


def wait_for_line(log: Path, text: str, timeout: float, *, after: int = 0) -> float | None:
    """Seconds until `text` appears in the log past byte `after`, or None when the time runs out."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if log.exists():
            with log.open("rb") as handle:
                handle.seek(after)
                if text.encode() in handle.read():
                    return time.monotonic() - started
        time.sleep(0.5)
    return None


def tail(log: Path, lines: int = 40) -> str:
    """The last lines of the log (for an error message when a VM did not get where it should)."""
    if not log.exists():
        return f"({log} does not exist)"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
