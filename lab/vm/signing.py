"""The VM tier's OS image signing key: os_install checks the image's signature, so it is signed."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

IDENTITY = "Greenlight VM tier <vm-tier@greenlight.invalid>"


@dataclass(frozen=True)
class SigningKey:
    home: Path  # a GNUPGHOME of its own, never the user's

    @property
    def public_keyring(self) -> Path:
        return self.home / "public.gpg"

    def sign(self, path: Path) -> str:
        """An ASCII-armoured detached signature of the file (what the manifest's `signature` holds)."""
        return _gpg(self.home, "--armor", "--detach-sign", "--output", "-", str(path))


def ensure_signing_key(home: Path) -> SigningKey:
    """An Ed25519 signing key made once in `home`, and its public keyring exported beside it."""
    key = SigningKey(home)
    if key.public_keyring.exists():
        return key
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    _gpg(home, "--passphrase", "", "--quick-gen-key", IDENTITY, "ed25519", "sign", "never")
    key.public_keyring.write_bytes(
        subprocess.run(
            ["gpg", "--homedir", str(home), "--batch", "--export"], check=True, capture_output=True
        ).stdout
    )
    return key


def _gpg(home: Path, *args: str) -> str:
    result = subprocess.run(
        ["gpg", "--homedir", str(home), "--batch", "--quiet", "--pinentry-mode", "loopback", *args],
        capture_output=True,
        text=True,
    )
    # gpg leaves an agent running for its home; the tier leaves nothing running behind it.
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True)
    if result.returncode:
        raise RuntimeError(f"gpg {' '.join(args[:2])} failed: {result.stderr.strip()}")
    return result.stdout
