"""A node's TPM evidence checked with tpm2-tools: key binding, quote, event-log replay, golden values.

Greenlight never parses TPM structures itself: tpm2_makecredential seals the credential to the
node's EK (no TPM needed on the server: `-T none`), tpm2_print decodes the AK's public area and
the quote's attestation structure, tpm2_checkquote verifies the signature, the nonce and the
PCR values, and tpm2_eventlog replays the UEFI event log to PCR values. This module reads their
printed YAML and turns the differences into findings that name the PCR and the measurement.

tpm2-tools 5.4 (Debian 12) is older than the fix for CVE-2024-29039 (checkquote did not compare
the quoted PCR selection with the PCR file's), so the selection is compared here, from
tpm2_print's reading of the quote.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import io
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from fleet.measured_boot import MEASUREMENTS, selector_of

from .parsers.base import Finding, Severity

TOOLS = ("tpm2_makecredential", "tpm2_checkquote", "tpm2_print", "tpm2_eventlog")
MISSING_TOOLS = "{tools} not found: install tpm2-tools (.ci/run installs it, with swtpm)"
# What an attestation key must be: made inside this TPM, never leaving it, signing only
# structures the TPM itself made (restricted), so a quote cannot be forged with it.
AK_ATTRIBUTES = {"fixedtpm", "fixedparent", "sensitivedataorigin", "restricted", "sign"}
TPM_GENERATED = "ff544347"
ATTEST_QUOTE = "8018"
TOOL_TIMEOUT_S = 60
# A UEFI event log is tens of KiB; a server's with many option ROMs a few hundred.
MAX_LOG_BYTES = 16 * 1024 * 1024
# Every scalar as the tool printed it: a safe loader would read 8018 or 0x00ab… as numbers.
Loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


class TpmToolsMissing(RuntimeError):
    """tpm2-tools is not installed where Greenlight judges attestation."""


class EvidenceRefused(ValueError):
    """The node's keys cannot be challenged: the message says why (a finding, not a crash)."""


def require_tools() -> None:
    """Raise TpmToolsMissing naming the tools that are not on PATH."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise TpmToolsMissing(MISSING_TOOLS.format(tools=", ".join(missing)))


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    require_tools()
    try:
        return subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        # The inputs are the node's: one that keeps a tool busy this long is refused.
        raise EvidenceRefused(f"{cmd[0]} took longer than {TOOL_TIMEOUT_S} s") from None


def _said(done: subprocess.CompletedProcess) -> str:
    lines = [x for x in done.stderr.splitlines() if x.startswith("ERROR")] or [done.stderr]
    return " ".join(x.strip() for x in lines)[-300:]


def _decode(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value or ""), validate=True)
    except binascii.Error:
        raise EvidenceRefused(f"{what} is not base64") from None


def _hex(value: Any) -> str:
    """A digest or field as tpm2-tools prints it (0xAB…, ab…) -> lowercase hex."""
    return str(value or "").strip().lower().removeprefix("0x")


def ek_fingerprint(ek_public_b64: str) -> str:
    """SHA-256 of the EK's public area: what a node's trust-on-first-use binding records."""
    return hashlib.sha256(_decode(ek_public_b64, "the EK public")).hexdigest()


def public_facts(tpm2b_public: bytes) -> dict[str, Any]:
    """A key's type, name algorithm, attributes (tpm2_print) and name.

    The name is the name algorithm's id and digest of the public area (TPM 2.0 Part 1, 16): the
    TPM2B's two-byte size is the only thing stripped here.
    """
    with tempfile.TemporaryDirectory(prefix="greenlight-tpm-") as tmp:
        (Path(tmp) / "key.pub").write_bytes(tpm2b_public)
        done = _run(["tpm2_print", "-t", "TPM2B_PUBLIC", "key.pub"], Path(tmp))
    if done.returncode != 0:
        raise EvidenceRefused(f"the key's public area does not decode: {_said(done)}")
    printed = yaml.load(done.stdout, Loader=Loader) or {}
    name_alg = str((printed.get("name-alg") or {}).get("value", ""))
    attributes = set(str((printed.get("attributes") or {}).get("value", "")).split("|"))
    size = int.from_bytes(tpm2b_public[:2], "big")
    if name_alg != "sha256" or size != len(tpm2b_public) - 2:
        raise EvidenceRefused(f"the key's public area is not a sha256-named TPM2B ({name_alg})")
    name = "000b" + hashlib.sha256(tpm2b_public[2:]).hexdigest()
    return {
        "name": name,
        "attributes": attributes,
        "type": (printed.get("type") or {}).get("value"),
    }


@dataclass
class Challenge:
    """What Greenlight sent for one attestation: kept server-side to judge the answer by."""

    nonce: str
    bank: str
    pcrs: list[int]
    ek_sha256: str
    ak_name: str
    secret_sha256: str

    @property
    def selection(self) -> str:
        return f"{self.bank}:{','.join(str(p) for p in self.pcrs)}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Challenge:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def make_challenge(keys: dict[str, Any], bank: str, pcrs: list[int]) -> tuple[Challenge, str]:
    """A fresh nonce and a credential only the TPM holding this EK and AK can open.

    keys: the agent's keys step ({ek_public, ak_public, ak_name}). Returns the challenge to keep
    and the credential (base64) to send. Raises EvidenceRefused for a key that is no AK.
    """
    ek = _decode(keys.get("ek_public"), "the EK public")
    ak = _decode(keys.get("ak_public"), "the AK public")
    facts = public_facts(ak)
    lacking = AK_ATTRIBUTES - facts["attributes"]
    if lacking:
        raise EvidenceRefused(
            f"the attestation key is not a restricted TPM signing key (lacks {sorted(lacking)})"
        )
    if str(keys.get("ak_name", "")).lower() != facts["name"]:
        raise EvidenceRefused("the AK's name is not the name of the AK public the node sent")
    secret = secrets.token_bytes(32)
    with tempfile.TemporaryDirectory(prefix="greenlight-tpm-") as tmp:
        work = Path(tmp)
        (work / "ek.pub").write_bytes(ek)
        (work / "secret").write_bytes(secret)
        done = _run(
            ["tpm2_makecredential", "-T", "none", "-u", "ek.pub", "-s", "secret",
             "-n", facts["name"], "-o", "credential"], work,
        )  # fmt: skip
        if done.returncode != 0:
            raise EvidenceRefused(f"no credential can be sealed to this EK: {_said(done)}")
        credential = (work / "credential").read_bytes()
    challenge = Challenge(
        nonce=secrets.token_hex(20),
        bank=bank,
        pcrs=sorted(pcrs),
        ek_sha256=hashlib.sha256(ek).hexdigest(),
        ak_name=facts["name"],
        secret_sha256=hashlib.sha256(secret).hexdigest(),
    )
    return challenge, base64.b64encode(credential).decode()


def _selected_pcrs(bitmap_hex: str) -> list[int]:
    """PCR indexes of a TPMS_PCR_SELECTION bitmap as tpm2_print shows it (byte i, bit j = 8i+j)."""
    data = bytes.fromhex(bitmap_hex)
    return [8 * i + j for i, byte in enumerate(data) for j in range(8) if byte & (1 << j)]


def _quote_finding(message: str, code: str) -> Finding:
    return Finding("TPM", "node", message, code=code)


def verify_quote(quote: dict[str, Any], ak_public: bytes, challenge: Challenge):
    """Check a quote against the challenge: (quoted PCR values {pcr: hex}, findings)."""
    with tempfile.TemporaryDirectory(prefix="greenlight-tpm-") as tmp:
        work = Path(tmp)
        (work / "ak.pub").write_bytes(ak_public)
        for name in ("message", "signature", "pcrs"):
            (work / name).write_bytes(_decode(quote.get(name), f"the quote's {name}"))
        printed = _run(["tpm2_print", "-t", "TPMS_ATTEST", "message"], work)
        if printed.returncode != 0:
            return {}, [_quote_finding(f"the quote does not decode: {_said(printed)}", "quote")]
        attest = yaml.load(printed.stdout, Loader=Loader) or {}
        findings = _attest_findings(attest, challenge)
        if findings:
            return {}, findings
        checked = _run(
            ["tpm2_checkquote", "-u", "ak.pub", "-m", "message", "-s", "signature",
             "-f", "pcrs", "-g", "sha256", "-q", challenge.nonce], work,
        )  # fmt: skip
    if checked.returncode != 0:
        why = f"the quote's signature or PCR values did not verify: {_said(checked)}"
        return {}, [_quote_finding(why, "quote_signature")]
    banks = (yaml.load(checked.stdout, Loader=Loader) or {}).get("pcrs") or {}
    values = {int(p): _hex(v) for p, v in (banks.get(challenge.bank) or {}).items()}
    if sorted(values) != challenge.pcrs:
        why = f"the PCR file holds {sorted(values)}, not the PCRs asked for {challenge.pcrs}"
        return {}, [_quote_finding(why, "quote_selection")]
    return values, []


def _attest_findings(attest: dict[str, Any], challenge: Challenge) -> list[Finding]:
    """The quote's own fields: made by a TPM, a quote, over this nonce and this selection."""
    if _hex(attest.get("magic")) != TPM_GENERATED or _hex(attest.get("type")) != ATTEST_QUOTE:
        return [_quote_finding("the signed structure is not a TPM-generated quote", "quote")]
    if _hex(attest.get("extraData")) != challenge.nonce.lower():
        return [
            _quote_finding(
                "the quote is not over this attestation's nonce: a replayed or stale quote",
                "nonce",
            )
        ]
    selections = ((attest.get("attested") or {}).get("quote") or {}).get("pcrSelect") or {}
    quoted: dict[str, list[int]] = {}
    for entry in (selections.get("pcrSelections") or {}).values():
        bank = str(entry.get("hash", "")).split("(")[-1].rstrip(")").strip()
        quoted[bank] = _selected_pcrs(_hex(entry.get("pcrSelect")))
    if quoted != {challenge.bank: challenge.pcrs}:
        return [
            _quote_finding(
                f"the quote covers {quoted}, not the PCRs asked for "
                f"({challenge.bank} {challenge.pcrs})",
                "quote_selection",
            )
        ]
    return []


@dataclass(frozen=True)
class LogEvent:
    """One extended event of a replayed log, as tpm2_eventlog printed it."""

    pcr: int
    event_type: str
    digest: str
    description: str


def _description(event: dict[str, Any]) -> str:
    body = event.get("Event")
    if isinstance(body, dict):
        if "String" in body:
            return str(body["String"]).strip('"').replace("\\0", "").strip()
        if "UnicodeName" in body:
            data = body.get("VariableData")
            state = f" {data}" if isinstance(data, dict) and len(str(data)) < 60 else ""
            return f"{body['UnicodeName']}{state}"
        if "ImageLengthInMemory" in body:
            return f"EFI image of {body['ImageLengthInMemory']} bytes"
    return str(body or "")[:80]


def _digests(event: dict[str, Any]) -> dict[str, str]:
    """An event's digests by bank: a crypto-agile log lists them, a TPM 1.2-format log has sha1."""
    listed = event.get("Digests")
    if isinstance(listed, list):
        return {
            str(d.get("AlgorithmId")): str(d.get("Digest")) for d in listed if isinstance(d, dict)
        }
    return {"sha1": str(event["Digest"])} if "Digest" in event else {}


def replay_event_log(log: bytes, bank: str) -> tuple[dict[int, str], list[LogEvent], str | None]:
    """Replay a UEFI event log with tpm2_eventlog: ({pcr: value}, extended events, error)."""
    with tempfile.TemporaryDirectory(prefix="greenlight-tpm-") as tmp:
        (Path(tmp) / "eventlog.bin").write_bytes(log)
        done = _run(["tpm2_eventlog", "eventlog.bin"], Path(tmp))
    if done.returncode != 0:
        return {}, [], f"the event log does not parse: {_said(done)}"
    printed = yaml.load(done.stdout, Loader=Loader) or {}
    pcrs = {int(p): _hex(v) for p, v in ((printed.get("pcrs") or {}).get(bank) or {}).items()}
    events = []
    for event in printed.get("events") or []:
        if not isinstance(event, dict) or event.get("EventType") == "EV_NO_ACTION":
            continue
        digests = _digests(event)
        if bank not in digests:
            continue
        events.append(
            LogEvent(
                int(event["PCRIndex"]),
                str(event.get("EventType")),
                _hex(digests[bank]),
                _description(event),
            )
        )
    if not events:
        return pcrs, [], f"the event log has no {bank} measurements"
    return pcrs, events, None


def unpack_log(entry: Any) -> bytes | None:
    """A log the agent sent ({gzip_b64}) as bytes; None where it sent none."""
    if not isinstance(entry, dict) or not entry.get("gzip_b64"):
        return None
    packed = io.BytesIO(_decode(entry["gzip_b64"], "the event log"))
    try:
        with gzip.GzipFile(fileobj=packed) as unpacked:
            data = unpacked.read(MAX_LOG_BYTES + 1)
    except (OSError, EOFError):
        raise EvidenceRefused("the event log is not gzip data") from None
    # Read no further than a real log's size: a small gzip can unpack to gigabytes.
    if len(data) > MAX_LOG_BYTES:
        raise EvidenceRefused(f"the event log unpacks to more than {MAX_LOG_BYTES} bytes")
    return data


def replay_findings(quoted: dict[int, str], replayed: dict[int, str], size: int) -> list[Finding]:
    """PCRs whose quoted value the event log does not replay to: the log is not that boot."""
    findings = []
    for pcr, value in sorted(quoted.items()):
        # A PCR no event touched keeps its reset value, all zeros.
        expected = replayed.get(pcr, "0" * size)
        if expected != value:
            findings.append(
                Finding(
                    f"PCR {pcr}",
                    "node",
                    f"PCR {pcr}: the event log replays to {expected[:12]}…, the TPM quoted "
                    f"{value[:12]}…: the log is not the boot the TPM measured",
                    code="replay_mismatch",
                )
            )
    return findings


def measurements_seen(events: list[LogEvent], golden: dict[str, Any] | None) -> dict[str, list]:
    """Every known (and every golden) measurement's events: what a reference node would pin."""
    specs = {name: {} for name in MEASUREMENTS} | dict((golden or {}).get("measurements") or {})
    seen: dict[str, list] = {}
    for name, spec in specs.items():
        selector = selector_of(name, spec)
        seen[name] = [
            {"pcr": e.pcr, "type": e.event_type, "digest": e.digest, "description": e.description}
            for e in events
            if selector.selects(e.pcr, e.event_type, e.description)
        ]
    return seen


def golden_findings(
    seen: dict[str, list], golden: dict[str, Any], untrusted: set[int]
) -> list[Finding]:
    """Measurements absent, or with a digest outside the golden set; PCRs in `untrusted`
    (their log does not replay) are already failed and not read."""
    findings = []
    for name, spec in sorted((golden.get("measurements") or {}).items()):
        pcr = selector_of(name, spec).pcr
        if pcr in untrusted:
            continue
        part = f"PCR {pcr}"
        events = seen.get(name) or []
        if not events:
            findings.append(
                Finding(
                    part,
                    "node",
                    f"PCR {pcr}: no {name} measurement in the event log",
                    code="measurement_missing",
                )  # fmt: skip
            )
            continue
        allowed = set(spec.get("digests") or [])
        for event in events:
            if event["digest"] not in allowed:
                findings.append(
                    Finding(
                        part,
                        "node",
                        f"PCR {pcr}: {name} measurement {event['digest'][:8]}… "
                        f"({event['description'][:60]}) not in the golden set",
                        code="measurement_mismatch",
                    )
                )
        if spec.get("count") and len(events) != spec["count"]:
            findings.append(
                Finding(
                    part,
                    "node",
                    f"PCR {pcr}: {len(events)} {name} measurements, the "
                    f"golden set has {spec['count']}",
                    code="measurement_count",
                )  # fmt: skip
            )
    return findings


def secure_boot_state(events: list[LogEvent]) -> str:
    """ "enabled", "disabled" or "unknown", from the SecureBoot variable measured into PCR 7."""
    for event in events:
        if event.pcr == 7 and event.description.startswith("SecureBoot"):
            return "enabled" if "'Yes'" in event.description else "disabled"
    return "unknown"


def check_evidence(
    evidence: dict[str, Any], challenge: Challenge, golden: dict[str, Any] | None
) -> tuple[list[Finding], dict[str, Any]]:
    """Judge a quote step's evidence against what was sent and the manifest's golden values.

    Returns (findings, metrics); any finding fails the gate. Raises TpmToolsMissing.
    """
    metrics: dict[str, Any] = {"quote_verified": False}
    try:
        ek = _decode(evidence.get("ek_public"), "the EK public")
        ak = _decode(evidence.get("ak_public"), "the AK public")
        if hashlib.sha256(ek).hexdigest() != challenge.ek_sha256:
            return [_quote_finding("the quote came with another EK than the one challenged",
                                   "ek_changed")], metrics  # fmt: skip
        if public_facts(ak)["name"] != challenge.ak_name:
            return [_quote_finding("the quote came with another AK than the one challenged",
                                   "ak_changed")], metrics  # fmt: skip
        secret = bytes.fromhex(str(evidence.get("activated_secret") or ""))
        if hashlib.sha256(secret).hexdigest() != challenge.secret_sha256:
            why = "the AK is not bound to the node's EK: the credential did not activate"
            return [_quote_finding(why, "ak_not_bound")], metrics
        quote = evidence.get("quote")
        if not isinstance(quote, dict):
            raise EvidenceRefused("the node sent no quote")
        quoted, findings = verify_quote(quote, ak, challenge)
        if findings:
            return findings, metrics
        metrics.update(
            quote_verified=True, bank=challenge.bank, pcrs={str(p): v for p, v in quoted.items()}
        )
        log = unpack_log(evidence.get("event_log"))
    except (EvidenceRefused, ValueError) as exc:
        return [_quote_finding(str(exc), "evidence")], metrics
    if log is None:
        sent = evidence.get("event_log")
        why = sent.get("missing") if isinstance(sent, dict) else None
        return [_quote_finding(f"no UEFI event log: {why or 'the node sent none'}",
                               "event_log_missing")], metrics  # fmt: skip
    try:
        replayed, events, error = replay_event_log(log, challenge.bank)
    except EvidenceRefused as exc:
        replayed, events, error = {}, [], str(exc)
    if error:
        return [_quote_finding(error, "event_log")], metrics
    size = len(next(iter(quoted.values()), "")) or 64
    findings = replay_findings(quoted, replayed, size)
    seen = measurements_seen(events, golden)
    # Only a log that replays to every quoted PCR may be pinned as a reference's golden values.
    metrics.update(
        measurements=seen, secure_boot=secure_boot_state(events), log_replays=not findings
    )
    if golden:
        untrusted = {int(f.part.split()[-1]) for f in findings}
        findings += golden_findings(seen, golden, untrusted)
    return findings, metrics


def not_attested(why: str, required: bool) -> Finding:
    """The finding for a node that gave no verifiable quote: fails only where required."""
    severity = Severity.CRITICAL if required else Severity.WARNING
    rule = "the profile requires a TPM" if required else "the profile does not require a TPM"
    return Finding("TPM", "node", f"not attested: {why} ({rule})", severity, code="not_attested")
