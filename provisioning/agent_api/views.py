"""The agent's API: thin views over provisioning.agent_sessions and agent_link."""

from __future__ import annotations

import json

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from ..agent_link import store_result
from ..agent_sessions import AgentRefusal, CheckIn, authenticate, check_in, command_for, heartbeat
from ..models import AgentCommand
from ..scheduling import nudge


def _body(request: HttpRequest) -> dict:
    try:
        body = json.loads(request.body or b"{}")
    except json.JSONDecodeError:
        raise ValueError("body is not JSON") from None
    if not isinstance(body, dict):
        raise ValueError("body must be a JSON object")
    return body


def _remote(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR", "")


def _refused(exc: AgentRefusal) -> JsonResponse:
    return JsonResponse({"error": str(exc)}, status=403)


@csrf_exempt  # agents authenticate with their per-boot token, not a browser session
@require_POST
def checkin(request: HttpRequest) -> JsonResponse:
    try:
        body = _body(request)
        claim = CheckIn(
            serial=str(body["serial"]),
            macs=[str(m) for m in body.get("macs") or []],
            boot_id=str(body["boot_id"]),
            environment=str(body.get("environment", "ephemeral")),
            agent_url=str(body["agent_url"]),
        )
    except (ValueError, KeyError) as exc:
        return JsonResponse({"error": f"bad check-in: {exc}"}, status=400)
    try:
        session, token = check_in(claim, remote=_remote(request))
    except AgentRefusal as exc:
        return _refused(exc)
    return JsonResponse({"token": token, "node_id": session.node_id, "boot_id": session.boot_id})


@csrf_exempt
@require_POST
def agent_heartbeat(request: HttpRequest) -> JsonResponse:
    try:
        session = authenticate(
            request.headers.get("Authorization", ""), remote=_remote(request), path=request.path
        )
        heartbeat(session, str(_body(request).get("agent_url", "")))
    except AgentRefusal as exc:
        return _refused(exc)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse({"ok": True})


def _command_and_body(request: HttpRequest, command_id: int) -> tuple[AgentCommand, dict]:
    """The command this request's agent may report on, and the body; AgentRefusal or ValueError."""
    session = authenticate(
        request.headers.get("Authorization", ""), remote=_remote(request), path=request.path
    )
    command = command_for(session, command_id, remote=_remote(request))
    return command, _body(request)


@csrf_exempt
@require_POST
def command_result(request: HttpRequest, command_id: int) -> JsonResponse:
    try:
        command, body = _command_and_body(request, command_id)
    except AgentRefusal as exc:
        return _refused(exc)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    if store_result(command, body) and command.run_id:
        nudge(command.run_id)
    return JsonResponse({"ok": True})


@csrf_exempt
@require_POST
def command_log(request: HttpRequest, command_id: int) -> JsonResponse:
    try:
        command, body = _command_and_body(request, command_id)
    except AgentRefusal as exc:
        return _refused(exc)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    text = str(body.get("text", ""))
    AgentCommand.objects.filter(pk=command.pk).update(output=(command.output + text)[-200_000:])
    return JsonResponse({"ok": True})
