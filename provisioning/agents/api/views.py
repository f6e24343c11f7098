"""The agent's API: thin views over provisioning.agents.sessions and agent_link.

Every body is checked for shape before anything is stored: a malformed request is a 400 that
says what is wrong, a refused one a 403, and neither changes a session or a command.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from agent import protocol

from ...choices import CommandStatus
from ...models import AgentCommand
from ...scheduling import nudge
from ..link import store_result
from ..sessions import (
    AgentRefusal,
    AgentUnauthenticated,
    CheckIn,
    authenticate_poll,
    authenticate_report,
    check_in,
    interval_after_result,
    poll,
    record_inventory,
)

MAX_FIELD_CHARS = 256
MAX_MACS = 64
MAX_KNOWN = 10_000
MAX_LOG_APPEND = 64_000


class BadRequest(ValueError):
    """The body does not have the shape the endpoint takes."""


class BodyTooLarge(BadRequest):
    """The body is over Django's limit (DATA_UPLOAD_MAX_MEMORY_SIZE): 413, not 400."""


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        raw = request.body
    except RequestDataTooBig:
        # Django refuses to read it (on Content-Length, or past the limit) and would answer 400.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise BodyTooLarge(f"body is larger than the limit of {limit} bytes") from None
    try:
        body = json.loads(raw or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadRequest("body is not JSON") from None
    except RecursionError:
        raise BadRequest("body is nested too deeply") from None
    if not isinstance(body, dict):
        raise BadRequest("body must be a JSON object")
    return body


def _text(body: dict, name: str, *, required: bool = True, default: str = "") -> str:
    value = body.get(name, None if required else default)
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string")
    if len(value) > MAX_FIELD_CHARS:
        raise BadRequest(f"{name} is longer than {MAX_FIELD_CHARS} characters")
    return value


def _object(body: dict, name: str) -> dict[str, Any]:
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f"{name} must be a JSON object")
    return value


def tls_only(view):
    """Refuse an agent request that did not come over TLS, before reading anything of it."""

    @functools.wraps(view)
    def guarded(request: HttpRequest, *args, **kwargs) -> JsonResponse:
        if settings.GREENLIGHT_AGENT_REQUIRE_TLS and not request.is_secure():
            return JsonResponse(
                {"error": "the agent API answers only over TLS (https)"}, status=403
            )
        return view(request, *args, **kwargs)

    return guarded


def _remote(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR", "")


def _refused(exc: AgentRefusal) -> JsonResponse:
    if isinstance(exc, AgentUnauthenticated):
        # No live token: the agent must check in again (a new boot), not retry this one.
        answer = JsonResponse({"error": str(exc)}, status=401)
        answer["WWW-Authenticate"] = 'Bearer realm="greenlight-agent"'
        return answer
    return JsonResponse({"error": str(exc)}, status=403)


def _bad(exc: BadRequest) -> JsonResponse:
    return JsonResponse({"error": str(exc)}, status=413 if isinstance(exc, BodyTooLarge) else 400)


def _check_in_claim(body: dict[str, Any]) -> CheckIn:
    macs = body.get("macs") or []
    if not isinstance(macs, list) or len(macs) > MAX_MACS:
        raise BadRequest(f"macs must be a list of at most {MAX_MACS} strings")
    if not all(isinstance(m, str) and len(m) <= 64 for m in macs):
        raise BadRequest("macs must be a list of MAC address strings")
    return CheckIn(
        serial=_text(body, "serial"),
        macs=macs,
        boot_id=_text(body, "boot_id"),
        environment=_text(body, "environment", required=False, default="ephemeral"),
        credential=_text(body, "credential", required=False),
        inventory=_object(body, "inventory"),
    )


@csrf_exempt  # agents authenticate with their boot credential and per-boot token, not a session
@require_POST
@tls_only
def checkin(request: HttpRequest) -> JsonResponse:
    try:
        claim = _check_in_claim(_body(request))
        session, token = check_in(claim, remote=_remote(request))
    except BadRequest as exc:
        return _bad(exc)
    except AgentRefusal as exc:
        return _refused(exc)
    # Nothing here reads the database: the check-in committed and spent the boot credential, so
    # a retry would be refused, and the token must reach the agent though the database went
    # away just now (a failover). check_in worked out the interval before its commit.
    return JsonResponse(
        {
            "token": token,
            "node_id": session.node_id,
            "boot_id": session.boot_id,
            "poll_s": session.poll_s,
        }
    )


@csrf_exempt
@require_POST
@tls_only
def agent_poll(request: HttpRequest) -> JsonResponse:
    try:
        session = authenticate_poll(
            request.headers.get("Authorization", ""), remote=_remote(request), path=request.path
        )
        known = _body(request).get("known") or []
        if not isinstance(known, list) or len(known) > MAX_KNOWN:
            raise BadRequest(f"known must be a list of at most {MAX_KNOWN} command ids")
        if not all(isinstance(k, int) and not isinstance(k, bool) for k in known):
            raise BadRequest("known must hold command ids (integers)")
        commands, poll_s = poll(session, set(known))
    except AgentRefusal as exc:
        return _refused(exc)
    except BadRequest as exc:
        return _bad(exc)
    return JsonResponse({"commands": commands, "poll_s": poll_s})


def _command_and_body(
    request: HttpRequest, command_id: int, *, interval: bool = False
) -> tuple[AgentCommand, dict]:
    """The command this request's agent may report on (its session on it), and the body."""
    command = authenticate_report(
        request.headers.get("Authorization", ""),
        command_id,
        remote=_remote(request),
        path=request.path,
        interval=interval,
    )
    return command, _body(request)


def validated_result(body: dict[str, Any]) -> dict[str, Any]:
    """The result fields Greenlight stores, checked; BadRequest names the first wrong one."""
    status = body.get("status")
    if status not in ("done", "failed"):
        raise BadRequest("status must be 'done' or 'failed'")
    exit_code = body.get("exit_code")
    low, high = protocol.EXIT_CODE_RANGE
    if exit_code is not None and (
        not isinstance(exit_code, int)
        or isinstance(exit_code, bool)
        or not low <= exit_code <= high
    ):
        raise BadRequest(f"exit_code must be an integer from {low} to {high}, or null")
    output = body.get("output") or ""
    if not isinstance(output, str):
        raise BadRequest("output must be a string")
    if len(output) > protocol.MAX_OUTPUT_CHARS:
        raise BadRequest(f"output is longer than {protocol.MAX_OUTPUT_CHARS} characters")
    return {
        "status": status,
        "exit_code": exit_code,
        "result": _object(body, "result"),
        "output": output,
        "inventory": _object(body, "inventory"),
    }


@csrf_exempt
@require_POST
@tls_only
def command_result(request: HttpRequest, command_id: int) -> JsonResponse:
    try:
        command, body = _command_and_body(request, command_id, interval=True)
        result = validated_result(body)
    except AgentRefusal as exc:
        return _refused(exc)
    except BadRequest as exc:
        return _bad(exc)
    if not store_result(command, result):
        return JsonResponse({"error": f"command {command_id} is already closed"}, status=409)
    if result["inventory"]:
        record_inventory(command.session, result["inventory"])
    if command.run_id:
        nudge(command.run_id)
    return JsonResponse({"ok": True, "poll_s": interval_after_result(command)})


@csrf_exempt
@require_POST
@tls_only
def command_log(request: HttpRequest, command_id: int) -> JsonResponse:
    try:
        command, body = _command_and_body(request, command_id)
        text = body.get("text", "")
        if not isinstance(text, str) or len(text) > MAX_LOG_APPEND:
            raise BadRequest(f"text must be a string of at most {MAX_LOG_APPEND} characters")
    except AgentRefusal as exc:
        return _refused(exc)
    except BadRequest as exc:
        return _bad(exc)
    open_statuses = (CommandStatus.QUEUED, CommandStatus.SENT)
    if command.status not in open_statuses:
        return JsonResponse({"error": f"command {command_id} is already closed"}, status=409)
    AgentCommand.objects.filter(pk=command.pk, status__in=open_statuses).update(
        output=(command.output + text)[-protocol.MAX_OUTPUT_CHARS :]
    )
    return JsonResponse({"ok": True})
