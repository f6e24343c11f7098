"""sushy-tools' Redfish emulator with its libvirt driver, on loopback, with TLS and basic auth."""

from __future__ import annotations

import os
import secrets
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import httpx

from lab.bmc.certs import fingerprint, make_certificate

from .domain import OVMF_CODE, OVMF_VARS
from .libvirt_host import URI

SUSHY_BIN = Path(sys.executable).parent / "sushy-emulator"


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
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _keep(path: Path, make) -> bytes:
    """The file's bytes, made once."""
    if not path.exists():
        path.write_bytes(make())
        path.chmod(0o600)
    return path.read_bytes()


def start_sushy(workdir: Path, port: int, allowed: list[str], timeout: float = 60.0) -> Sushy:
    """Start the emulator serving only the `allowed` domain UUIDs; return once it answers."""
    workdir.mkdir(parents=True, exist_ok=True)
    username, password = (
        "admin",
        _keep(workdir / "password", lambda: secrets.token_hex(12).encode()).decode(),
    )
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()
    (workdir / "htpasswd").write_text(f"{username}:{hashed}\n")
    # Kept across runs, as a real BMC keeps its certificate: Greenlight pinned it at enrollment.
    if not (workdir / "cert.pem").exists() or not (workdir / "key.pem").exists():
        cert_pem, key_pem = make_certificate("127.0.0.1", "greenlight-vm-bmc")
        (workdir / "key.pem").write_bytes(key_pem)
        (workdir / "key.pem").chmod(0o600)
        (workdir / "cert.pem").write_bytes(cert_pem)
    cert_pem = (workdir / "cert.pem").read_bytes()
    settings = {
        "SUSHY_EMULATOR_LISTEN_IP": "127.0.0.1",
        "SUSHY_EMULATOR_LISTEN_PORT": port,
        "SUSHY_EMULATOR_SSL_CERT": str(workdir / "cert.pem"),
        "SUSHY_EMULATOR_SSL_KEY": str(workdir / "key.pem"),
        "SUSHY_EMULATOR_AUTH_FILE": str(workdir / "htpasswd"),
        "SUSHY_EMULATOR_LIBVIRT_URI": URI,
        "SUSHY_EMULATOR_ALLOWED_INSTANCES": allowed,
        # The "vmedia" profile: systems, managers, NICs, power, boot override and VirtualMedia,
        # as a minimal BMC offers. The "full" one adds a chassis whose template serial
        # (437XR1138R2) is the same for every system, so every VM would enroll as one node.
        "SUSHY_EMULATOR_FEATURE_SET": "vmedia",
        # The domains' own firmware, so the emulator reads their boot mode back as UEFI.
        "SUSHY_EMULATOR_BOOT_LOADER_MAP": {
            "UEFI": {"x86_64": OVMF_CODE},
            "Legacy": {"x86_64": None},
        },
        "SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM": OVMF_VARS,
        "SUSHY_EMULATOR_STATE_DIR": str(workdir / "state"),
    }
    (workdir / "sushy.conf").write_text("".join(f"{k} = {v!r}\n" for k, v in settings.items()))
    log = open(workdir / "sushy.log", "ab")  # noqa: SIM115 - the child holds it
    process = subprocess.Popen(
        [str(SUSHY_BIN), "--config", str(workdir / "sushy.conf")],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    log.close()
    sushy = Sushy(f"https://127.0.0.1:{port}", username, password, cert_pem, process)
    deadline = time.monotonic() + timeout
    ca = ssl.create_default_context(cafile=str(workdir / "cert.pem"))
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                "sushy-emulator exited: " + (workdir / "sushy.log").read_text()[-2000:]
            )
        try:
            httpx.get(sushy.url + "/redfish/v1/", verify=ca, timeout=2)
            return sushy
        except httpx.TransportError:
            time.sleep(0.2)
    sushy.stop()
    raise RuntimeError(f"sushy-emulator did not answer within {timeout} s")
