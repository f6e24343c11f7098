"""A node's secrets kept out of what its agent sent, wherever that text is shown or quoted.

What an agent relays comes from the node: a tool may print the node's BMC password, its boot
credential (the kernel log carries the kernel command line) or the agent's own token. The output
itself is stored as the agent sent it and redacted where a person or a client reads it: a
phase's log, a gate result's raw output in the API and the admin. What is written *from* it is
redacted before it is written: a gate's verdict is judged on the redacted output (so a parser's
error, a finding's quote, the phase error, the run's last error, the events and webhooks that
repeat them are clean), an upload is parsed redacted, a phase error quotes a redacted tail.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

from fleet.models import Node

from ..boot import credentials as boot_credentials
from ..models import AgentCommand, AgentSession, BootCredential

REDACTED = "[redacted]"
# A secret shorter than this is not looked for: replacing every "abc" would wreck the log, and
# no credential Greenlight mints is that short (a BMC password that short is its own problem).
MIN_SECRET_CHARS = 4
# Credentials as a tool may print them whatever their value: the boot credential on a kernel
# command line, the host credential as the install record spells it. Each with text that any
# match of it holds, in lower case, looked for in the text lowered before the pattern runs: a
# substring search costs a fraction of a scan by the pattern, and most output holds none.
CREDENTIAL_PATTERNS = (
    ("greenlight.credential=", re.compile(r"(greenlight\.credential=)\S+")),
    ('"host_credential"', re.compile(r"(\"host_credential\"\s*:\s*\")[^\"\n]*")),
    # HTTP Basic as `curl -v` prints it: base64 of "user:password", whoever's it is. "thor":
    # letters of "Authorization" that no other character matches without regard to case (re
    # lets "ı" and "İ" match "i", and "ſ" match "s").
    ("thor", re.compile(r"(Authorization:\s*Basic\s+)[A-Za-z0-9+/=]+", re.IGNORECASE)),
    # A URL's userinfo password: https://user:password@host.
    ("://", re.compile(r"([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^@\s/]+(?=@)", re.IGNORECASE)),
)


class Redactor:
    """Replaces a node's secrets in text: known values, and credentials by their shape."""

    def __init__(self, secrets: set[str]) -> None:
        # Longest first, so a secret that contains another is replaced whole; none spans lines,
        # so a page's line numbers hold after redaction.
        kept = {s for s in secrets if len(s) >= MIN_SECRET_CHARS and "\n" not in s}
        self._wanted = sorted(kept | {e for s in kept for e in encodings(s)}, key=len, reverse=True)
        self._values: re.Pattern[str] | None = None

    def __call__(self, text: str) -> str:
        # The secrets are looked for one by one before their pattern is compiled and run: judging
        # a gate redacts every output it reads, and on a lab gate's outputs the pattern took five
        # times what the searches take (all of redaction: 1.6 ms a gate before, 0.14 ms now).
        if any(secret in text for secret in self._wanted):
            if self._values is None:
                self._values = re.compile("|".join(re.escape(s) for s in self._wanted))
            text = self._values.sub(REDACTED, text)
        lowered = text.lower()
        for held, pattern in CREDENTIAL_PATTERNS:
            if held in lowered:
                text = pattern.sub(rf"\g<1>{REDACTED}", text)
        return text

    def tree(self, value: Any) -> Any:
        """`value` (JSON: dicts, lists, strings...) with every string redacted, keys included."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self(str(k)): self.tree(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.tree(v) for v in value]
        return value


def encodings(secret: str) -> set[str]:
    """The forms a tool may print a secret in besides its own: URL-encoded (a query string, a
    form body) and base64 (a config dump, a JSON blob), each padded or not."""
    raw = secret.encode()
    b64 = base64.b64encode(raw).decode()
    found = {quote(secret, safe=""), quote_plus(secret), b64, b64.rstrip("=")}
    return {f for f in found if f != secret and len(f) >= MIN_SECRET_CHARS}


def redactor_for(node: Node, session_ids: Iterable[int] | None = None) -> Redactor:
    """What must never show in `node`'s relayed output.

    `session_ids` names the agents that relayed it; None means every agent the node has had.
    """
    secrets = {node.bmc_password or ""}
    credentials = BootCredential.objects.filter(node=node).values_list("nonce", "media_key")
    for nonce, media_key in credentials:
        secrets.add(boot_credentials.derive_secret(node.pk, nonce))
        # The key names the node's ISO, which carries the credential: as good as the secret.
        secrets.add(media_key)
    sessions = AgentSession.objects.filter(node=node)
    if session_ids is not None:
        sessions = sessions.filter(pk__in=set(session_ids))
    for boot_id, nonce in sessions.values_list("boot_id", "nonce"):
        secrets.add(boot_credentials.derive_token(node.pk, boot_id, nonce))
    return Redactor(secrets)


def relayed_by(command: AgentCommand) -> list[int]:
    """The agent session that relayed `command`'s output and result (none if no agent took it)."""
    return [command.session_id] if command.session_id else []


def output_tail(command: AgentCommand, chars: int) -> str:
    """The last `chars` characters of a command's output, redacted: fit to quote in an error."""
    return redactor_for(command.node, relayed_by(command))(command.output)[-chars:]


def output_last_line(command: AgentCommand) -> str:
    """A command's last line of output, redacted ("no output" where it printed nothing)."""
    lines = output_tail(command, 2000).strip().splitlines()
    return lines[-1] if lines else "no output"
