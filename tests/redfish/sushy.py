"""Start sushy-tools' emulator (fake driver, basic auth, TLS) on loopback for the test suite."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import httpx

from lab.bmc.certs import fingerprint, make_certificate

SUSHY_BIN = Path(sys.executable).parent / "sushy-emulator"


@dataclass
class Sushy:
    url: str
    username: str
    password: str
    fingerprint: str
    system_uuid: str
    mac: str
    process: subprocess.Popen


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_sushy(workdir: Path) -> Sushy:
    """Write the config, htpasswd and certificate into workdir and start the emulator."""
    if not SUSHY_BIN.exists() or shutil.which(str(SUSHY_BIN)) is None:
        raise FileNotFoundError(SUSHY_BIN)
    state = workdir / "state"
    state.mkdir(parents=True)  # fresh: state survives restarts in this directory
    username, password = "admin", uuid.uuid4().hex
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    (workdir / "htpasswd").write_text(f"{username}:{hashed}\n")
    cert_pem, key_pem = make_certificate("127.0.0.1", "sushy-test")
    (workdir / "cert.pem").write_bytes(cert_pem)
    (workdir / "key.pem").write_bytes(key_pem)
    system_uuid, mac = str(uuid.uuid4()), "52:54:00:12:34:56"
    (workdir / "sushy.conf").write_text(
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(state)!r}\n"
        f"SUSHY_EMULATOR_AUTH_FILE = {str(workdir / 'htpasswd')!r}\n"
        f"SUSHY_EMULATOR_SSL_CERT = {str(workdir / 'cert.pem')!r}\n"
        f"SUSHY_EMULATOR_SSL_KEY = {str(workdir / 'key.pem')!r}\n"
        "SUSHY_EMULATOR_FAKE_SYSTEMS = [{"
        f"'uuid': {system_uuid!r}, 'name': 'greenlight-fake', 'power_state': 'Off', "
        f"'nics': [{{'mac': {mac!r}, 'ip': '172.22.0.100'}}]}}]\n"
    )
    port = free_port()
    log = open(workdir / "sushy.log", "wb")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(
        [
            str(SUSHY_BIN),
            "--config",
            str(workdir / "sushy.conf"),
            "-i",
            "127.0.0.1",
            "-p",
            str(port),
            "--fake",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError((workdir / "sushy.log").read_text()[-2000:])
        try:
            # Readiness only: the test's own client pins the certificate below.
            httpx.get(url + "/redfish/v1/", verify=False, timeout=1)  # noqa: S501
            break
        except httpx.TransportError:
            time.sleep(0.1)
    else:
        process.kill()
        raise RuntimeError("sushy-emulator did not start")
    return Sushy(url, username, password, fingerprint(cert_pem), system_uuid, mac, process)


def stop_sushy(sushy: Sushy) -> None:
    sushy.process.terminate()
    try:
        sushy.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        sushy.process.kill()
