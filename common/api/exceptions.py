"""The API's exception handler: DRF's, with a body over Django's size limit answered 413.

Django refuses to read a body over DATA_UPLOAD_MAX_MEMORY_SIZE (JSON and form bodies are read
whole; a multipart form's fields count too) with RequestDataTooBig, which it would answer 400:
the client is told nothing about size.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class BodyTooLarge(APIException):
    """413: the body is over the limit; the detail names it."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "body_too_large"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, after turning RequestDataTooBig into a 413 naming the limit."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = BodyTooLarge(f"the body is larger than the limit of {limit} bytes")
    return drf_exception_handler(exc, context)
