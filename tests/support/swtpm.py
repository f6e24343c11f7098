"""A real software TPM 2.0 for tests: swtpm on loopback, driven by tpm2-tools.

The tests fail (never skip) where swtpm or tpm2-tools is missing: a skipped attestation test
would let the suite go green with the gate unchecked. `.ci/run` installs both.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

NEEDED = (
    "swtpm", "swtpm_setup", "tpm2_createek", "tpm2_createak", "tpm2_quote", "tpm2_checkquote",
    "tpm2_makecredential", "tpm2_activatecredential", "tpm2_eventlog", "tpm2_print",
    "tpm2_pcrextend", "tpm2_flushcontext",
)  # fmt: skip


def require_tpm_tools() -> None:
    """Fail the test, naming what is missing, where swtpm or tpm2-tools is not installed."""
    missing = [t for t in NEEDED if shutil.which(t) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not found: the attestation tests need swtpm, swtpm-tools and "
            "tpm2-tools (.ci/run installs them: apt-get install swtpm swtpm-tools tpm2-tools)",
            pytrace=False,
        )


def _free_port_pair() -> int:
    """A port P with P and P+1 free on loopback (swtpm's server and control channels)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port >= 65535:
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
        except OSError:
            continue
        return port
    raise RuntimeError("no two consecutive free ports on loopback")


@dataclass
class SoftwareTpm:
    """A running swtpm: its TCTI for tpm2-tools, and a way to extend its PCRs."""

    tcti: str
    state: Path

    def tool(self, *cmd: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [cmd[0], "-T", self.tcti, *cmd[1:]], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        return done

    def extend(self, pcr: int, bank: str, digest: str) -> None:
        """Extend one PCR, as firmware measuring a boot component would."""
        self.tool("tpm2_pcrextend", f"{pcr}:{bank}={digest}")


@contextmanager
def software_tpm(workdir: Path) -> Iterator[SoftwareTpm]:
    """A fresh swtpm with an EK, listening on free loopback ports; stopped after the block."""
    require_tpm_tools()
    state = workdir / "swtpm-state"
    state.mkdir(parents=True)
    setup = subprocess.run(
        ["swtpm_setup", "--tpm2", "--tpmstate", str(state.resolve()), "--createek",
         "--overwrite"], capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert setup.returncode == 0, setup.stdout + setup.stderr
    port = _free_port_pair()
    proc = subprocess.Popen(
        ["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={state.resolve()}",
         "--server", f"type=tcp,port={port},bindaddr=127.0.0.1",
         "--ctrl", f"type=tcp,port={port + 1},bindaddr=127.0.0.1",
         "--flags", "not-need-init,startup-clear"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"swtpm did not start: {proc.stderr.read()}") from None
                time.sleep(0.05)
        yield SoftwareTpm(f"swtpm:host=127.0.0.1,port={port}", state)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
