"""The node's TPM 2.0, through tpm2-tools: its keys, Greenlight's credential challenge, a quote.

The attestation tool runs in two steps, each one agent command:

  keys   make the endorsement key (from the TPM's endorsement seed: the same key every time) and
         a fresh attestation key under it (restricted, signing, fixedTPM); answer both publics
         and the AK's name.
  quote  activate the credential Greenlight made for that AK with the EK's public
         (tpm2_activatecredential: only the TPM holding both keys can), then quote the PCRs
         Greenlight names with its nonce, and hand over the UEFI and IMA event logs.

Greenlight checks everything; this side only asks the TPM. Every tool call passes through the
`capture` seam like the rest of the hardware layer. The AK is a transient key kept as a saved
context in `workdir` between the two steps: a reboot in between loses it, and the gate asks again.
"""

from __future__ import annotations

import base64
import gzip
from pathlib import Path
from typing import Any

from .tools import Capture, Completed, capture

# The kernel's resource manager first: it flushes what each tool leaves loaded in the TPM.
DEVICES = ("tpmrm0", "tpm0")
EVENT_LOG = Path("kernel/security/tpm0/binary_bios_measurements")
IMA_LOG = Path("kernel/security/ima/binary_runtime_measurements")
# A log past this (gzipped) is left out and said so: the result must fit one HTTP request.
MAX_LOG_BYTES = 1024 * 1024
QUOTE_HASH = "sha256"


class TpmError(Exception):
    """A tpm2-tools command failed; the message carries the tool's own words."""


def find_tcti(dev_root: Path = Path("/dev")) -> str | None:
    """The TCTI of the node's TPM device, or None where the node has no TPM."""
    for name in DEVICES:
        if (dev_root / name).exists():
            return f"device:{dev_root / name}"
    return None


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def read_log(path: Path) -> dict[str, Any]:
    """A binary log as {gzip_b64, size}, or {missing: why}."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {"missing": f"{path} does not exist"}
    except OSError as exc:
        return {"missing": f"{path} cannot be read: {exc.strerror or exc}"}
    packed = gzip.compress(data, mtime=0)
    if len(packed) > MAX_LOG_BYTES:
        return {"missing": f"{path} is {len(data)} bytes, over what one result carries"}
    return {"gzip_b64": b64(packed), "size": len(data)}


class Tpm:
    """One TPM, reached through `tcti`; its key files live in `workdir`."""

    def __init__(self, tcti: str, workdir: Path, capture: Capture = capture):
        self.tcti = tcti
        self.workdir = workdir
        self.capture = capture

    def path(self, name: str) -> str:
        return str(self.workdir / name)

    async def tool(self, name: str, *args: str) -> Completed:
        """Run one tpm2-tools command against this TPM; raise TpmError if it fails."""
        done = await self.capture([name, "-T", self.tcti, *args])
        # Without a resource manager (/dev/tpm0, a simulator's socket) the transient objects a
        # tool loaded stay loaded, and three of them fill the TPM: flush them after every tool.
        await self.capture(["tpm2_flushcontext", "-T", self.tcti, "-t"])
        if done.code != 0:
            said = (done.stderr or done.stdout).strip()[-400:]
            raise TpmError(f"{name} exited {done.code}: {said}")
        return done

    async def keys(self) -> dict[str, str]:
        """Make the EK and a fresh AK; their publics (TPM2B_PUBLIC) and the AK's name."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        await self.tool(
            "tpm2_createek", "-c", self.path("ek.ctx"), "-G", "rsa", "-u", self.path("ek.pub")
        )
        await self.tool(
            "tpm2_createak", "-C", self.path("ek.ctx"), "-c", self.path("ak.ctx"),
            "-G", "rsa", "-g", QUOTE_HASH, "-s", "rsassa",
            "-u", self.path("ak.pub"), "-n", self.path("ak.name"),
        )  # fmt: skip
        return self.key_facts()

    def key_facts(self) -> dict[str, str]:
        """The publics of the keys the last `keys` made."""
        try:
            return {
                "ek_public": b64((self.workdir / "ek.pub").read_bytes()),
                "ak_public": b64((self.workdir / "ak.pub").read_bytes()),
                "ak_name": (self.workdir / "ak.name").read_bytes().hex(),
            }
        except FileNotFoundError:
            raise TpmError(
                "no attestation key was made in this boot: run the keys step first"
            ) from None

    async def activate(self, credential: bytes) -> bytes:
        """Recover the secret Greenlight sealed to this EK and AK name."""
        self.key_facts()  # the keys step ran in this boot
        (self.workdir / "credential").write_bytes(credential)
        session = self.path("session.ctx")
        # The EK's policy asks for the endorsement hierarchy's authorisation (PolicySecret).
        await self.tool("tpm2_startauthsession", "--policy-session", "-S", session)
        try:
            await self.tool("tpm2_policysecret", "-S", session, "-c", "e")
            await self.tool(
                "tpm2_activatecredential", "-c", self.path("ak.ctx"), "-C", self.path("ek.ctx"),
                "-i", self.path("credential"), "-o", self.path("secret"),
                "-P", f"session:{session}",
            )  # fmt: skip
        finally:
            await self.capture(["tpm2_flushcontext", "-T", self.tcti, session])
        return (self.workdir / "secret").read_bytes()

    async def quote(self, nonce_hex: str, selection: str) -> dict[str, str]:
        """Quote `selection` (e.g. sha256:0,4,7) with the AK over Greenlight's nonce."""
        await self.tool(
            "tpm2_quote", "-c", self.path("ak.ctx"), "-l", selection, "-q", nonce_hex,
            "-m", self.path("quote.msg"), "-s", self.path("quote.sig"),
            "-o", self.path("quote.pcrs"), "-g", QUOTE_HASH,
        )  # fmt: skip
        return {
            "message": b64((self.workdir / "quote.msg").read_bytes()),
            "signature": b64((self.workdir / "quote.sig").read_bytes()),
            "pcrs": b64((self.workdir / "quote.pcrs").read_bytes()),
            "selection": selection,
        }


async def evidence(params: dict, tpm: Tpm | None, sys_root: Path = Path("/sys")) -> dict:
    """The attestation tool's TPM answer to one step of Greenlight's request.

    params: {step: "keys"} or {step: "quote", nonce: hex, selection: "sha256:0,4,7",
    credential: base64}. A node without a TPM says so plainly, and Greenlight's profile decides.
    """
    if tpm is None:
        return {"present": False, "reason": "no TPM: neither /dev/tpmrm0 nor /dev/tpm0 exists"}
    step = params.get("step") or "keys"
    try:
        if step == "keys":
            return {"present": True, "step": "keys", **await tpm.keys()}
        if step != "quote":
            return {"present": True, "step": step, "error": f"unknown attestation step {step!r}"}
        nonce, selection = str(params.get("nonce") or ""), str(params.get("selection") or "")
        credential = base64.b64decode(str(params.get("credential") or ""), validate=True)
        if not nonce or not selection or not credential:
            return {"present": True, "step": step, "error": "the quote step needs a nonce, a "
                    "PCR selection and a credential"}  # fmt: skip
        secret = await tpm.activate(credential)
        return {
            "present": True,
            "step": "quote",
            **tpm.key_facts(),
            "activated_secret": secret.hex(),
            "quote": await tpm.quote(nonce, selection),
            "event_log": read_log(sys_root / EVENT_LOG),
            "ima_log": read_log(sys_root / IMA_LOG),
        }
    except (TpmError, ValueError) as exc:
        return {"present": True, "step": step, "error": str(exc)}
