"""sushy-tools' Redfish emulator as a child process: loopback, TLS and basic auth.

One starter for every sushy the lab and the suite run: the fake driver's one system for the
Redfish tests, the libvirt driver in front of the VM tier's domains. Each caller gives only its
driver's settings; the credentials, certificate, config file, process and readiness are here.
"""

from __future__ import annotations

import os
import secrets
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bcrypt
import httpx

from .bmc.certs import fingerprint, make_certificate
from .processes import free_port, stop

SUSHY_BIN = Path(sys.executable).parent / "sushy-emulator"
USERNAME = "admin"
# sushy-tools checks the password against the htpasswd hash on every request: the cheapest
# bcrypt cost keeps a busy VM tier's BMCs from spending their CPU on it (loopback only).
BCRYPT_ROUNDS = 4


@dataclass
class Sushy:
    """A running emulator: where it answers and the credentials it accepts."""

    url: str
    username: str
    password: str
    certificate: bytes
    process: subprocess.Popen

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.certificate)

    def stop(self) -> None:
        stop(self.process, timeout=10)


def _kept(path: Path, make) -> bytes:
    """The file's bytes, made once: a BMC keeps its password and certificate across restarts."""
    if not path.exists():
        path.write_bytes(make())
        path.chmod(0o600)
    return path.read_bytes()


def start_sushy(
    workdir: Path, driver: dict[str, Any], port: int | None = None, timeout: float = 60.0
) -> Sushy:
    """Start the emulator with `driver`'s settings (SUSHY_EMULATOR_*); return once it answers.

    The password and certificate are made once in `workdir` and kept, as a real BMC keeps its
    certificate: Greenlight pinned it at enrollment.
    """
    if not SUSHY_BIN.exists():
        raise FileNotFoundError(SUSHY_BIN)
    workdir.mkdir(parents=True, exist_ok=True)
    password = _kept(workdir / "password", lambda: secrets.token_hex(12).encode()).decode()
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=BCRYPT_ROUNDS)).decode()
    (workdir / "htpasswd").write_text(f"{USERNAME}:{hashed}\n")
    if not (workdir / "cert.pem").exists() or not (workdir / "key.pem").exists():
        cert_pem, key_pem = make_certificate("127.0.0.1", "greenlight-sushy")
        (workdir / "key.pem").write_bytes(key_pem)
        (workdir / "key.pem").chmod(0o600)
        (workdir / "cert.pem").write_bytes(cert_pem)
    port = port or free_port()
    settings = {
        "SUSHY_EMULATOR_LISTEN_IP": "127.0.0.1",
        "SUSHY_EMULATOR_LISTEN_PORT": port,
        "SUSHY_EMULATOR_SSL_CERT": str(workdir / "cert.pem"),
        "SUSHY_EMULATOR_SSL_KEY": str(workdir / "key.pem"),
        "SUSHY_EMULATOR_AUTH_FILE": str(workdir / "htpasswd"),
        "SUSHY_EMULATOR_STATE_DIR": str(workdir / "state"),
        **driver,
    }
    (workdir / "sushy.conf").write_text("".join(f"{k} = {v!r}\n" for k, v in settings.items()))
    with open(workdir / "sushy.log", "ab") as log:
        process = subprocess.Popen(
            [str(SUSHY_BIN), "--config", str(workdir / "sushy.conf")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    sushy = Sushy(
        f"https://127.0.0.1:{port}",
        USERNAME,
        password,
        (workdir / "cert.pem").read_bytes(),
        process,
    )
    deadline = time.monotonic() + timeout
    ca = ssl.create_default_context(cafile=str(workdir / "cert.pem"))
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = (workdir / "sushy.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"sushy-emulator exited: {said}")
        try:
            httpx.get(sushy.url + "/redfish/v1/", verify=ca, timeout=2)
            return sushy
        except httpx.TransportError:
            time.sleep(0.1)
    sushy.stop()
    raise RuntimeError(f"sushy-emulator did not answer within {timeout} s")
