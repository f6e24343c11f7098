"""POST /api/v1/alertmanager/: an Alertmanager webhook receiver that takes in suspect nodes.

Point a receiver's `webhook_configs` here. Each firing alert whose labels name a node (serial,
hostname, or instance host:port) starts the suspect-node loop on it (provisioning.day2.suspect); a
resolved one is noted on the node. Authenticated like the rest of the API (a user's token, with
the right to report nodes suspect) or by the bearer token in GREENLIGHT_ALERTMANAGER_TOKEN.
"""

from __future__ import annotations

import hmac
import json

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.authentication import (
    BaseAuthentication,
    SessionAuthentication,
    TokenAuthentication,
    get_authorization_header,
)
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from provisioning.day2.suspect import SUSPECT_PERM, AlertRejected, receive_alerts

# Alertmanager batches a group's alerts in one notification; a body larger than this is not one.
MAX_BODY_BYTES = 1024 * 1024
ALERTMANAGER = "alertmanager"


class AlertmanagerBearer(BaseAuthentication):
    """`Authorization: Bearer <GREENLIGHT_ALERTMANAGER_TOKEN>`: Alertmanager itself, no user."""

    def authenticate(self, request):
        words = get_authorization_header(request).split()
        if len(words) != 2 or words[0].lower() != b"bearer":
            return None
        token = settings.GREENLIGHT_ALERTMANAGER_TOKEN
        if not token or not hmac.compare_digest(words[1], token.encode()):
            raise AuthenticationFailed("wrong bearer token for the Alertmanager receiver")
        return AnonymousUser(), ALERTMANAGER

    def authenticate_header(self, request):
        return 'Bearer realm="alertmanager"'


class AlertmanagerBearerScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes AlertmanagerBearer."""

    target_class = AlertmanagerBearer
    name = "alertmanagerBearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "GREENLIGHT_ALERTMANAGER_TOKEN, sent by Alertmanager's webhook_config",
        }


class MayReportSuspect(BasePermission):
    """Alertmanager's bearer token, or a user who may report nodes suspect."""

    def has_permission(self, request, view):
        if request.auth == ALERTMANAGER:
            return True
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm(SUSPECT_PERM))


class AlertmanagerReceiver(viewsets.ViewSet):
    """Alertmanager's webhook: firing alerts start the suspect-node loop on the nodes they name."""

    authentication_classes = [AlertmanagerBearer, TokenAuthentication, SessionAuthentication]
    permission_classes = [MayReportSuspect]
    # The body is read here, bounded, so that a bad one gets this receiver's own 400.
    parser_classes: list = []

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="One outcome per alert"),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Not Alertmanager's JSON"),
            413: OpenApiResponse(OpenApiTypes.OBJECT, description="Body too large"),
        },
    )
    def create(self, request):
        """Take one Alertmanager notification (webhook JSON, version 4)."""
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
            return _too_large()
        body = request.body
        if len(body) > MAX_BODY_BYTES:
            return _too_large()
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return Response(
                {"detail": "the body is not JSON (Alertmanager's webhook JSON expected)"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        actor = request.user if request.auth != ALERTMANAGER else None
        try:
            outcomes = receive_alerts(payload, actor=actor)
        except AlertRejected as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        return Response({"alerts": outcomes}, status=status.HTTP_200_OK)


def _too_large() -> Response:
    return Response(
        {"detail": f"the body is larger than {MAX_BODY_BYTES} bytes"},
        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    )
