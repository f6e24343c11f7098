"""Uploads of a manual tool run's output to a node: parsed by the same parsers as the gates.

The output comes from the node: it is parsed redacted (provisioning.agents.redaction), so the result's
metrics and findings, the upload's event and the banner that quote it carry none of the node's
secrets. The output itself is kept as uploaded and redacted where it is read.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.models import Node
from provisioning.agents.redaction import redactor_for

from .choices import Verdict
from .gates import GATE_OF_TOOL
from .models import GateResult
from .parsers import PARSERS
from .parsers.base import ParseResult, Severity

MAX_UPLOAD = 20 * 1024 * 1024


class UploadRefused(Exception):
    """The upload cannot be taken; the message says why."""


class UploadTooLarge(UploadRefused):
    """The output is over MAX_UPLOAD (the API answers 413)."""


def verdict_of(parsed: ParseResult) -> str:
    """Error if the output cannot be judged, fail on any critical finding, else pass."""
    if parsed.error:
        return Verdict.ERROR
    if any(f.severity == Severity.CRITICAL for f in parsed.findings):
        return Verdict.FAIL
    return Verdict.PASS


def upload_output(node: Node, tool: str, text: str, *, actor) -> GateResult:
    """Parse a manual run's output and keep it, with its verdict and findings, on the node."""
    if not actor.has_perm("fleet.start_run"):
        raise PermissionDenied(f"{actor.get_username()} may not upload results")
    if tool not in GATE_OF_TOOL:
        expected = ", ".join(sorted(GATE_OF_TOOL))
        raise UploadRefused(f"unknown tool {tool!r}; expected one of {expected}")
    if len(text.encode()) > MAX_UPLOAD:
        raise UploadTooLarge(f"output larger than {MAX_UPLOAD // (1024 * 1024)} MiB")
    # Every agent the node has had: no agent relayed this, a person pasted it.
    parsed = PARSERS[tool](redactor_for(node)(text))
    now = timezone.now()
    with transaction.atomic():
        result = GateResult.objects.create(
            run=None,
            node=node,
            uploaded_by=actor,
            gate=GATE_OF_TOOL[tool],
            verdict=verdict_of(parsed),
            raw_output={tool: text},
            metrics={**parsed.metrics, **({"error": parsed.error} if parsed.error else {})},
            findings=[f.to_dict() for f in parsed.findings],
            tool_versions={tool: parsed.version or ""},
            started_at=now,
            finished_at=now,
        )
        record_event(
            node,
            EventKind.GATE_RESULT,
            actor=actor,
            message=f"uploaded {tool} output: {result.verdict}"
            + (f" ({parsed.error})" if parsed.error else ""),
            data={"gate_result": result.pk, "tool": tool, "verdict": result.verdict},
        )
    return result
